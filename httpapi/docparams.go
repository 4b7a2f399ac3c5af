package httpapi

import (
	"reflect"
	"strconv"
)

// Query parameter documentation shared by the area route tables: each
// helper documents what the matching parser in list.go accepts.

// bound returns a pointer to v, for Param.Minimum and Param.Maximum.
func bound(v float64) *float64 { return &v }

// pageQuery documents parsePage(q, def, maxSize): page ≥ 1 and pageSize ≥
// 1 (above maxSize it is clamped, so any positive size is accepted).
func pageQuery(def, maxSize int) []Param {
	return []Param{
		{Name: "page", Type: "integer", Minimum: bound(1), Description: "Page number, from 1 (default 1)"},
		{Name: "pageSize", Type: "integer", Minimum: bound(1),
			Description: "Items per page (default " + strconv.Itoa(def) + "; larger values are reduced to " + strconv.Itoa(maxSize) + ")"},
	}
}

// limitOffsetQuery documents parseLimitOffset(q, def, maxLimit).
func limitOffsetQuery(def, maxLimit int) []Param {
	return []Param{
		{Name: "limit", Type: "integer", Minimum: bound(1),
			Description: "Items to return (default " + strconv.Itoa(def) + "; larger values are reduced to " + strconv.Itoa(maxLimit) + ")"},
		{Name: "offset", Type: "integer", Minimum: bound(0), Description: "Items to skip (default 0)"},
	}
}

// sortQuery documents parseSort(q, fields, def).
func sortQuery(fields []string, def string) []Param {
	return []Param{
		{Name: "sortField", Enum: fields, Description: "Field to sort by (default " + def + ")"},
		{Name: "sortDir", Pattern: "^([aA][sS][cC]|[dD][eE][sS][cC])$", Description: "asc (default) or desc"},
	}
}

// boolQuery documents parseBool: true, false, 1 or 0 (any case).
func boolQuery(name, description string) Param {
	return Param{Name: name, Pattern: "^([tT][rR][uU][eE]|[fF][aA][lL][sS][eE]|1|0)$", Description: description}
}

// textQuery is a free-text parameter.
func textQuery(name, description string) Param {
	return Param{Name: name, Description: description}
}

// enumQuery is a parameter with a closed set of values.
func enumQuery(name, description string, values ...string) Param {
	return Param{Name: name, Enum: values, Description: description}
}

// enumTypes are the named string types whose values the document lists
// wherever the type appears in a body (docEnum fills it).
var enumTypes = map[reflect.Type][]any{}

// docEnum documents the values of a named string type. Area files call it
// in a package-level declaration: var _ = docEnum(toggles.Boolean, …).
func docEnum[T ~string](values ...T) struct{} {
	vals := make([]any, len(values))
	for i, v := range values {
		vals[i] = string(v)
	}
	enumTypes[reflect.TypeOf(values[0])] = vals
	return struct{}{}
}

// idBody is the {id} body many writes answer with.
type idBody struct {
	ID string `json:"id"`
}
