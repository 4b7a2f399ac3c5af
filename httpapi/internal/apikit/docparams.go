package apikit

import (
	"reflect"
	"strconv"
)

// Bound returns a pointer to v, for Param.Minimum and Param.Maximum.
func Bound(v float64) *float64 { return &v }

// PageQuery documents parsePage(q, def, maxSize): page ≥ 1 and pageSize ≥
// 1 (above maxSize it is clamped, so any positive size is accepted).
func PageQuery(def, maxSize int) []Param {
	return []Param{
		{Name: "page", Type: "integer", Minimum: Bound(1), Description: "Page number, from 1 (default 1)"},
		{Name: "pageSize", Type: "integer", Minimum: Bound(1),
			Description: "Items per page (default " + strconv.Itoa(def) + "; larger values are reduced to " + strconv.Itoa(maxSize) + ")"},
	}
}

// LimitOffsetQuery documents parseLimitOffset(q, def, maxLimit).
func LimitOffsetQuery(def, maxLimit int) []Param {
	return []Param{
		{Name: "limit", Type: "integer", Minimum: Bound(1),
			Description: "Items to return (default " + strconv.Itoa(def) + "; larger values are reduced to " + strconv.Itoa(maxLimit) + ")"},
		{Name: "offset", Type: "integer", Minimum: Bound(0), Description: "Items to skip (default 0)"},
	}
}

// SortQuery documents parseSort(q, fields, def).
func SortQuery(fields []string, def string) []Param {
	return []Param{
		{Name: "sortField", Enum: fields, Description: "Field to sort by (default " + def + ")"},
		{Name: "sortDir", Pattern: "^([aA][sS][cC]|[dD][eE][sS][cC])$", Description: "asc (default) or desc"},
	}
}

// BoolQuery documents parseBool: true, false, 1 or 0 (any case).
func BoolQuery(name, description string) Param {
	return Param{Name: name, Pattern: "^([tT][rR][uU][eE]|[fF][aA][lL][sS][eE]|1|0)$", Description: description}
}

// TextQuery is a free-text parameter.
func TextQuery(name, description string) Param {
	return Param{Name: name, Description: description}
}

// EnumQuery is a parameter with a closed set of values.
func EnumQuery(name, description string, values ...string) Param {
	return Param{Name: name, Enum: values, Description: description}
}

// enumTypes are the named string types whose values the document lists
// wherever the type appears in a body (docEnum fills it).
var EnumTypes = map[reflect.Type][]any{}

// DocEnum documents the values of a named string type. Area files call it
// in a package-level declaration: var _ = docEnum(toggles.Boolean, …).
func DocEnum[T ~string](values ...T) struct{} {
	vals := make([]any, len(values))
	for i, v := range values {
		vals[i] = string(v)
	}
	EnumTypes[reflect.TypeOf(values[0])] = vals
	return struct{}{}
}

// IdBody is the {id} body many writes answer with. (Its name, not
// IDBody, is the OpenAPI schema name the document has always used.)
type IdBody struct {
	ID string `json:"id"`
}
