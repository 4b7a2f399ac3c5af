package apikit

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

type Parameter struct {
	Name        string         `json:"name"`
	In          string         `json:"in"`
	Description string         `json:"description,omitempty"`
	Required    bool           `json:"required"`
	Schema      map[string]any `json:"schema"`
}

type MediaType struct {
	Schema  any `json:"schema"`
	Example any `json:"example,omitempty"`
}

type APIResponse struct {
	Description string                `json:"description"`
	Headers     map[string]*Header    `json:"headers,omitempty"`
	Content     map[string]*MediaType `json:"content,omitempty"`
}

type Header struct {
	Description string         `json:"description,omitempty"`
	Schema      map[string]any `json:"schema"`
}

// errorSchemaName is the component every error response refers to (the
// schema of errorBody).
const ErrorSchemaName = "ErrorBody"

// docPath is the path a route is documented under: its own, or, for
// routes that share a pattern (Match), the concrete path it serves.
func (rt Route) DocPath() string {
	if rt.Doc.DocPath != "" {
		return rt.Doc.DocPath
	}
	return rt.Path
}

// PathParams returns the names of a path's {wildcards}, in order.
func PathParams(p string) []string {
	var names []string
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return names
		}
		names = append(names, strings.TrimSuffix(p[i+1:i+j], "..."))
		p = p[i+j+1:]
	}
}

// parameters documents a route's path, query and header parameters.
func (rt Route) Parameters() []Parameter {
	var ps []Parameter
	for _, name := range PathParams(rt.DocPath()) {
		ps = append(ps, Parameter{Name: name, In: "path", Required: true, Schema: map[string]any{"type": "string"}})
	}
	query := rt.Doc.Query
	if rt.Doc.Exports {
		query = append(slices.Clone(query), Param{Name: "format",
			Pattern:     "^([cC][sS][vV]|[jJ][sS][oO][nN]|[mM][aA][rR][kK][dD][oO][wW][nN]|[xX][mM][lL])$",
			Description: "Return the whole result set as a file in this format instead of a page: csv, json, markdown or xml (any case)"})
	}
	for _, q := range query {
		ps = append(ps, Parameter{Name: q.Name, In: "query", Description: q.Description, Required: q.Required, Schema: q.Schema()})
	}
	for _, h := range rt.Doc.Headers {
		ps = append(ps, Parameter{Name: h.Name, In: "header", Description: h.Description, Required: h.Required, Schema: h.Schema()})
	}
	return ps
}

// errorStatuses are the error statuses a route can answer: those its
// chain implies and those it declares.
func (rt Route) ErrorStatuses() []int {
	var out []int
	add := func(s int) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	hasBody := rt.HasBody()
	if hasBody || len(rt.Doc.Query) > 0 || rt.Doc.Exports || len(PathParams(rt.DocPath())) > 0 {
		add(http.StatusBadRequest)
	}
	if !rt.Access.Public {
		add(http.StatusUnauthorized)
		add(http.StatusForbidden)
	}
	if len(PathParams(rt.DocPath())) > 0 {
		add(http.StatusNotFound)
	}
	if hasBody {
		add(http.StatusRequestEntityTooLarge)
	}
	if rt.Limits.RateLimit != nil {
		add(http.StatusTooManyRequests)
	}
	for _, s := range rt.Doc.Errors {
		add(s)
	}
	slices.Sort(out)
	return out
}

func ErrorResponse(status int, rt Route) *APIResponse {
	desc := http.StatusText(status)
	switch status {
	case http.StatusBadRequest:
		desc = "Invalid input; details names the field"
	case http.StatusUnauthorized:
		desc = "No valid credential"
	case http.StatusForbidden:
		desc = "The caller lacks a required feature or has no tenant in scope"
		if len(rt.Access.Features) > 0 {
			desc += " (needs " + strings.Join(rt.Access.Features, ", ") + ")"
		}
		if rt.Access.SuperAdmin {
			desc = "The caller is not a super admin"
		}
	case http.StatusNotFound:
		desc = "Not found (or not visible to the caller's tenant)"
	case http.StatusRequestEntityTooLarge:
		desc = "The request body is over the route's limit"
	case http.StatusTooManyRequests:
		desc = "Rate limited; retry after Retry-After seconds"
	}
	r := &APIResponse{Description: desc, Content: map[string]*MediaType{"application/json": {Schema: Ref(ErrorSchemaName)}}}
	if status == http.StatusTooManyRequests {
		r.Headers = map[string]*Header{"Retry-After": {Description: "Seconds until a retry may succeed", Schema: map[string]any{"type": "integer"}}}
	}
	return r
}

// hasBody reports whether a route reads a request body.
func (rt Route) HasBody() bool {
	return rt.Doc.Request != nil || rt.Doc.RequestContent != "" || rt.Doc.FormBody
}

func (q Param) Schema() map[string]any {
	s := map[string]any{"type": cmp.Or(q.Type, "string")}
	if len(q.Enum) > 0 {
		s["enum"] = q.Enum
	}
	if q.Minimum != nil {
		s["minimum"] = *q.Minimum
	}
	if q.Maximum != nil {
		s["maximum"] = *q.Maximum
	}
	if q.Pattern != "" {
		s["pattern"] = q.Pattern
	}
	return s
}

func Ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}
