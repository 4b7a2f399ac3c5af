package apikit

// Param documents one query parameter of a route.
type Param struct {
	// Name is the parameter's name ("pageSize").
	Name string
	// Type is its JSON Schema type: "string" (the default), "integer",
	// "number" or "boolean".
	Type string
	// Description says what it does.
	Description string
	// Required parameters must be present.
	Required bool
	// Enum lists the accepted values, when they are a closed set.
	Enum []string
	// Minimum and Maximum bound an integer or number, when set.
	Minimum, Maximum *float64
	// Pattern is a regular expression (ECMA-262) a string value matches.
	Pattern string
}
