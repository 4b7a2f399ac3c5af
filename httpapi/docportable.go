package httpapi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The document is read by client generators (oapi-codegen, ogen,
// openapi-typescript) and linters (Redocly, Spectral) as well as by
// validators. Valid OpenAPI 3.1 that several of them cannot read is
// rewritten into forms that mean the same or are documented:
//
//   - a boolean schema (true: any value, false: none) becomes {} or
//     {"not": {}}; additionalProperties: false stays, which every
//     reader accepts;
//   - exclusiveMinimum / exclusiveMaximum become minimum / maximum with
//     the strict bound said in the description (the handlers still
//     refuse the bound itself, with a 400);
//   - an object schema that names no properties ({"type": "object"},
//     a map of any values) says additionalProperties: {}, which the
//     generators read as "any keys" rather than "no keys";
//   - an anyOf whose branches only name required properties ("give at
//     least one of") becomes minProperties with a description, as
//     generators turn such an anyOf into variant types without fields.

// portableSchema rewrites a schema (a decoded JSON value) as above.
func portableSchema(v any) any {
	switch s := v.(type) {
	case bool:
		if s {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	case map[string]any:
		for _, k := range []string{"properties", "patternProperties", "$defs", "dependentSchemas"} {
			if m, ok := s[k].(map[string]any); ok {
				for name, sub := range m {
					m[name] = portableSchema(sub)
				}
			}
		}
		for _, k := range []string{"items", "not", "contains", "propertyNames", "if", "then", "else",
			"unevaluatedItems", "unevaluatedProperties", "contentSchema"} {
			if sub, ok := s[k]; ok {
				s[k] = portableSchema(sub)
			}
		}
		if sub, ok := s["additionalProperties"]; ok && sub != false {
			s["additionalProperties"] = portableSchema(sub)
		}
		openObject(s)
		for _, k := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
			if list, ok := s[k].([]any); ok {
				for i, sub := range list {
					list[i] = portableSchema(sub)
				}
			}
		}
		strictBound(s, "exclusiveMinimum", "minimum", "greater than")
		strictBound(s, "exclusiveMaximum", "maximum", "less than")
		atLeastOneOf(s)
		return s
	}
	return v
}

// openObject gives an object schema without properties an explicit
// additionalProperties {}.
func openObject(s map[string]any) {
	if s["type"] != "object" {
		return
	}
	for _, k := range []string{"properties", "additionalProperties", "patternProperties", "$ref"} {
		if _, ok := s[k]; ok {
			return
		}
	}
	s["additionalProperties"] = map[string]any{}
}

// strictBound turns exclusive (a number) into inclusive with the strict
// bound in the description.
func strictBound(s map[string]any, exclusive, inclusive, words string) {
	bound, ok := s[exclusive].(float64)
	if !ok {
		return
	}
	delete(s, exclusive)
	if _, has := s[inclusive]; !has {
		s[inclusive] = bound
	}
	addDescription(s, fmt.Sprintf("Must be %s %s.", words, strconv.FormatFloat(bound, 'f', -1, 64)))
}

// atLeastOneOf turns {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
// into minProperties 1 (when a and b are all the properties) and a
// description naming them.
func atLeastOneOf(s map[string]any) {
	branches, ok := s["anyOf"].([]any)
	if !ok || len(branches) == 0 {
		return
	}
	var names []string
	for _, b := range branches {
		m, ok := b.(map[string]any)
		if !ok {
			return
		}
		for k := range m {
			if k != "required" && k != "title" {
				return
			}
		}
		req, ok := m["required"].([]any)
		if !ok || len(req) != 1 {
			return
		}
		name, ok := req[0].(string)
		if !ok {
			return
		}
		names = append(names, name)
	}
	delete(s, "anyOf")
	if props, ok := s["properties"].(map[string]any); ok && len(props) == len(names) {
		s["minProperties"] = 1
	}
	slices.Sort(names)
	addDescription(s, "Give at least one of "+strings.Join(names, ", ")+".")
}

func addDescription(s map[string]any, sentence string) {
	if d, ok := s["description"].(string); ok && d != "" {
		s["description"] = strings.TrimRight(d, ". ") + ". " + sentence
		return
	}
	s["description"] = sentence
}
