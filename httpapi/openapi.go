package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/invopop/jsonschema"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// The OpenAPI document is generated from the route table when it is
// first asked for: every route's method and path, its query and path
// parameters, its request and response bodies (JSON Schemas reflected
// from the Go types the handlers decode and encode, by
// github.com/invopop/jsonschema), its error statuses, the features it
// needs (x-required-features) and its credentials. Nothing in it is
// written by hand per route beyond the route table's fields, so it
// cannot drift from what is served.

// openAPI is the document (OpenAPI 3.1). Maps marshal with sorted keys,
// so the document is byte-for-byte stable.
type openAPI struct {
	OpenAPI    string                           `json:"openapi"`
	Info       openAPIInfo                      `json:"info"`
	Servers    []openAPIServer                  `json:"servers"`
	Tags       []openAPITag                     `json:"tags"`
	Paths      map[string]map[string]*operation `json:"paths"`
	Components openAPIComponents                `json:"components"`

	// order lists the operations as the route table does (for the
	// Markdown).
	order []*operation
}

type openAPIInfo struct {
	Title       string          `json:"title"`
	Version     string          `json:"version"`
	Description string          `json:"description"`
	License     *openAPILicense `json:"license,omitempty"`
}

type openAPILicense struct {
	Name       string `json:"name"`
	Identifier string `json:"identifier,omitempty"`
	URL        string `json:"url,omitempty"`
}

// openAPIServer is where the paths are served: the handler's base path,
// relative to the host the document was fetched from.
type openAPIServer struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

type openAPITag struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type openAPIComponents struct {
	Schemas         map[string]any            `json:"schemas"`
	SecuritySchemes map[string]securityScheme `json:"securitySchemes"`
}

type securityScheme struct {
	Type        string `json:"type"`
	In          string `json:"in,omitempty"`
	Name        string `json:"name,omitempty"`
	Scheme      string `json:"scheme,omitempty"`
	Description string `json:"description,omitempty"`
}

// operation is one method of one path.
type operation struct {
	OperationID string                         `json:"operationId"`
	Summary     string                         `json:"summary"`
	Description string                         `json:"description,omitempty"`
	Tags        []string                       `json:"tags"`
	Parameters  []apikit.Parameter             `json:"parameters,omitempty"`
	RequestBody *requestBody                   `json:"requestBody,omitempty"`
	Responses   map[string]*apikit.APIResponse `json:"responses"`
	// Security lists the accepted credentials; empty (not absent) on
	// public routes, which need none.
	Security []map[string][]string `json:"security"`
	// RequiredFeatures are the features a caller must all hold
	// (x-required-features); absent on public routes.
	RequiredFeatures []string `json:"x-required-features,omitempty"`
	// SuperAdmin routes need a super-admin caller (x-super-admin).
	SuperAdmin bool `json:"x-super-admin,omitempty"`
	// TenantWide routes change a setting of every organization of the
	// tenant and need a caller whose access covers the whole tenant
	// (x-tenant-wide).
	TenantWide bool `json:"x-tenant-wide,omitempty"`

	method, path string // for the Markdown
	public       bool
	optionalAuth bool
	details      string // the route's own Description, for the Markdown
}

type requestBody struct {
	Required bool                         `json:"required"`
	Content  map[string]*apikit.MediaType `json:"content"`
}

// JSON is the document's encoding.
func (d *openAPI) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("httpapi: encode the OpenAPI document: %w", err)
	}
	return buf.Bytes(), nil
}

// Security scheme names of the three credential forms.
const (
	schemeAPIKeyHeader = "apiKeyHeader"
	schemeAPIKeyAuth   = "apiKeyAuthorization"
	schemeBearer       = "bearerAuth"
)

// errorBody documents every error body the API writes: the default
// {error, details?}, the 403 of missing features, and the formats some
// areas use ({error, code}, {ok:false, error}, {ok:false, message},
// {error, fields}).
type errorBody struct {
	Error            string            `json:"error,omitempty" jsonschema:"description=What went wrong; 5xx bodies never carry internals"`
	Code             string            `json:"code,omitempty" jsonschema:"description=A stable error code (feature toggle checks and rule sets)"`
	Message          string            `json:"message,omitempty" jsonschema:"description=What went wrong (data sync and integrations)"`
	OK               *bool             `json:"ok,omitempty" jsonschema:"description=false (sign-in and data sync routes)"`
	Details          any               `json:"details,omitempty" jsonschema:"description=Per-field messages (field name to message)"`
	Fields           map[string]string `json:"fields,omitempty" jsonschema:"description=Per-field messages of a record's values"`
	Required         []string          `json:"required,omitempty" jsonschema:"description=The features the caller lacks (403)"`
	RequiredFeatures []string          `json:"requiredFeatures,omitempty" jsonschema:"description=The features the caller lacks (403)"`
	RequiredRoles    []string          `json:"requiredRoles,omitempty" jsonschema:"description=The roles the route needs (403)"`
	RequiredScope    string            `json:"requiredScope,omitempty" jsonschema:"enum=tenant,description=tenant: the route changes a setting of every organization and the caller's access is limited to some (403)"`
}

// requiredScopeTenant is the requiredScope of a tenant-wide route's 403.
const requiredScopeTenant = "tenant"

// areaDescriptions describe the documentation's sections.
var areaDescriptions = map[string]string{
	"Health":           "Liveness and readiness.",
	"Identity":         "Tenants, organizations, roles, users, API keys, sign-in and password reset.",
	"Feature toggles":  "Global toggles, per-tenant overrides and the checks.",
	"Business rules":   "Rules, rule sets, execution and execution logs.",
	"Webhooks":         "Outbound webhooks, their deliveries, and the inbound receiver.",
	"Custom entities":  "Entities, custom fields and records.",
	"Attachments":      "Files, partitions, images and text extraction.",
	"Payment gateways": "Payment sessions, capture, refund, cancel, status and provider webhooks.",
	"Dashboards":       "Layouts, widgets and their visibility.",
	"Progress":         "Progress of long-running jobs.",
	"Integrations":     "The integration catalogue, per-tenant state, credentials and logs.",
	"Data sync":        "Import and export runs of the sync integrations.",
	"Notifications":    "Each caller's own inbox of notifications.",
	"Events":           "The live, resumable stream of broadcast domain events (Server-Sent Events).",
	"Documentation":    "This document, as OpenAPI, Markdown and an explorer.",
	"Custom":           "Routes added by the host application.",
}

// buildOpenAPI builds the document of a route table served under base.
func buildOpenAPI(base string, routes []apikit.Route, license DocsLicense) (*openAPI, error) {
	g := newSchemaGen()
	if _, err := g.response(reflect.TypeOf(errorBody{})); err != nil {
		return nil, err
	}
	doc := &openAPI{
		OpenAPI: "3.1.0",
		Info: openAPIInfo{Title: "tenantkit API", Version: "1",
			Description: "The REST API of tenantkit: multi-tenant business rules, feature toggles, custom entities and records, " +
				"attachments, dashboards, payment gateways, integrations and data sync, webhooks and rate limiting. " +
				"Authenticate with an API key (X-Api-Key or Authorization: ApiKey) or a session token (Authorization: Bearer). " +
				"Each operation's x-required-features lists the features its caller must hold; " +
				"an operation marked x-tenant-wide changes a setting of every organization of the tenant and answers 403 " +
				"(requiredScope: tenant) to a caller whose access is limited to some organizations. " +
				"A query parameter given with an empty value counts as absent."},
		Servers: []openAPIServer{{URL: cmp.Or(base, "/"),
			Description: "The API's base path on the host that serves this document"}},
		Paths: map[string]map[string]*operation{},
	}
	if license.Name != "" {
		doc.Info.License = &openAPILicense{Name: license.Name, Identifier: license.Identifier}
		if license.Identifier == "" {
			doc.Info.License.URL = license.URL
		}
	}
	seenTags := map[string]bool{}
	seenIDs := map[string]bool{}
	for _, rt := range routes {
		op, err := g.operation(base, rt)
		if err != nil {
			return nil, fmt.Errorf("httpapi: document %s %s: %w", rt.Method, rt.Path, err)
		}
		if seenIDs[op.OperationID] {
			return nil, fmt.Errorf("httpapi: document %s %s: operation id %s used twice", rt.Method, rt.Path, op.OperationID)
		}
		seenIDs[op.OperationID] = true
		key := strings.TrimPrefix(op.path, base)
		item := doc.Paths[key]
		if item == nil {
			item = map[string]*operation{}
			doc.Paths[key] = item
		}
		item[strings.ToLower(rt.Method)] = op
		doc.order = append(doc.order, op)
		if tag := op.Tags[0]; !seenTags[tag] {
			seenTags[tag] = true
			doc.Tags = append(doc.Tags, openAPITag{Name: tag, Description: areaDescriptions[tag]})
		}
	}
	doc.Components = openAPIComponents{
		Schemas: g.components,
		SecuritySchemes: map[string]securityScheme{
			schemeAPIKeyHeader: {Type: "apiKey", In: "header", Name: "X-Api-Key", Description: "An API key."},
			schemeAPIKeyAuth:   {Type: "apiKey", In: "header", Name: "Authorization", Description: "An API key as `Authorization: ApiKey <key>`."},
			schemeBearer:       {Type: "http", Scheme: "bearer", Description: "A session token from POST /login."},
		},
	}
	return doc, nil
}

func (g *schemaGen) operation(base string, rt apikit.Route) (*operation, error) {
	p := rt.DocPath()
	op := &operation{
		OperationID:  operationID(rt.Method, p),
		Summary:      rt.Doc.Summary,
		Description:  rt.Describe(),
		details:      rt.Doc.Description,
		Tags:         []string{rt.Doc.Area},
		Parameters:   rt.Parameters(),
		method:       rt.Method,
		path:         base + strings.ReplaceAll(p, "...}", "}"),
		public:       rt.Access.Public,
		optionalAuth: rt.Access.OptionalAuth,
	}
	op.Security = []map[string][]string{}
	if !rt.Access.Public {
		op.Security = []map[string][]string{{schemeAPIKeyHeader: {}}, {schemeAPIKeyAuth: {}}, {schemeBearer: {}}}
		if rt.Access.OptionalAuth {
			op.Security = append(op.Security, map[string][]string{})
		}
		op.RequiredFeatures = rt.Access.Features
		op.SuperAdmin = rt.Access.SuperAdmin
		op.TenantWide = rt.Access.TenantWide
	}
	if rt.HasBody() {
		body, err := g.requestBody(rt)
		if err != nil {
			return nil, err
		}
		op.RequestBody = body
	}
	var err error
	op.Responses, err = g.responses(rt)
	return op, err
}

// responses documents a route's answers: its success, the error statuses
// it can answer, what http.ServeContent adds (Ranges), and 5XX.
func (g *schemaGen) responses(rt apikit.Route) (map[string]*apikit.APIResponse, error) {
	out := map[string]*apikit.APIResponse{}
	success, err := g.successResponse(rt)
	if err != nil {
		return nil, err
	}
	for _, h := range rt.Doc.ResponseHeaders {
		if success.Headers == nil {
			success.Headers = map[string]*apikit.Header{}
		}
		success.Headers[h.Name] = &apikit.Header{Description: h.Description, Schema: h.Schema()}
	}
	out[strconv.Itoa(cmp.Or(rt.Doc.Status, http.StatusOK))] = success
	for _, status := range rt.ErrorStatuses() {
		out[strconv.Itoa(status)] = apikit.ErrorResponse(status, rt)
	}
	for status, v := range rt.Doc.ErrorTypes {
		s, err := g.response(reflect.TypeOf(v))
		if err != nil {
			return nil, err
		}
		out[strconv.Itoa(status)] = &apikit.APIResponse{Description: http.StatusText(status),
			Content: map[string]*apikit.MediaType{"application/json": {Schema: s}}}
	}
	if rt.Doc.Ranges {
		partial := &apikit.APIResponse{Description: "Partial Content: the range asked for (Range)", Content: map[string]*apikit.MediaType{},
			Headers: map[string]*apikit.Header{"Content-Range": {Description: "The range sent", Schema: map[string]any{"type": "string"}}}}
		for _, ct := range append(slices.Clone(rt.Doc.ResponseContent), "multipart/byteranges") {
			partial.Content[ct] = &apikit.MediaType{Schema: map[string]any{"type": "string"}}
		}
		out["206"] = partial
		out["304"] = &apikit.APIResponse{Description: "Not Modified (If-None-Match, If-Modified-Since)"}
		out["412"] = &apikit.APIResponse{Description: "Precondition Failed (If-Match, If-Unmodified-Since)"}
		out["416"] = &apikit.APIResponse{Description: "Range Not Satisfiable",
			Content: map[string]*apikit.MediaType{"text/plain": {Schema: map[string]any{"type": "string"}}}}
	}
	out["5XX"] = &apikit.APIResponse{Description: "Internal error; the body never carries internals",
		Content: map[string]*apikit.MediaType{"application/json": {Schema: apikit.Ref(apikit.ErrorSchemaName)}}}
	return out, nil
}

// formContents are the media types of a FormBody route's request.
var formContents = []string{"application/x-www-form-urlencoded", "multipart/form-data", "application/json"}

func (g *schemaGen) requestBody(rt apikit.Route) (*requestBody, error) {
	ct := cmp.Or(rt.Doc.RequestContent, "application/json")
	var schema any = map[string]any{}
	if rt.Doc.Request != nil {
		s, err := g.request(reflect.TypeOf(rt.Doc.Request))
		if err != nil {
			return nil, err
		}
		schema = s
	} else if ct == "application/octet-stream" {
		schema = map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}
	}
	body := &requestBody{Required: !rt.Doc.BodyOptional, Content: map[string]*apikit.MediaType{ct: {Schema: schema, Example: rt.Doc.Example}}}
	if rt.Doc.FormBody {
		body.Content = map[string]*apikit.MediaType{}
		for _, ct := range formContents {
			body.Content[ct] = &apikit.MediaType{Schema: schema, Example: rt.Doc.Example}
		}
	}
	return body, nil
}

func (g *schemaGen) successResponse(rt apikit.Route) (*apikit.APIResponse, error) {
	status := cmp.Or(rt.Doc.Status, http.StatusOK)
	r := &apikit.APIResponse{Description: cmp.Or(rt.Doc.Summary, http.StatusText(status))}
	if rt.Doc.Response == nil && len(rt.Doc.ResponseContent) == 0 {
		return r, nil
	}
	r.Content = map[string]*apikit.MediaType{}
	if rt.Doc.Response != nil {
		t := reflect.TypeOf(rt.Doc.Response)
		s, err := g.response(t)
		if err != nil {
			return nil, err
		}
		r.Content["application/json"] = &apikit.MediaType{Schema: s}
	}
	for _, ct := range rt.Doc.ResponseContent {
		r.Content[ct] = &apikit.MediaType{Schema: map[string]any{"type": "string"}}
	}
	if rt.Doc.Exports {
		// format=json's file is an array of rows, under its own media type.
		r.Content[apikit.ExportJSONContentType] = &apikit.MediaType{Schema: map[string]any{"type": "array",
			"items": map[string]any{"type": "object", "additionalProperties": map[string]any{}}}}
		for _, ct := range []string{"text/csv", "text/markdown", "application/xml"} {
			r.Content[ct] = &apikit.MediaType{Schema: map[string]any{"type": "string"}}
		}
	}
	return r, nil
}

// operationID names an operation after its method and path:
// GET /feature_toggles/global/{id} → getFeatureTogglesGlobalById.
func operationID(method, p string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(p, "/") {
		if seg == "" {
			continue
		}
		if strings.HasPrefix(seg, "{") {
			b.WriteString("By")
			seg = strings.Trim(seg, "{}.")
		}
		for _, word := range strings.FieldsFunc(seg, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			b.WriteString(upperFirst(word))
		}
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// schemaGen reflects Go types into JSON Schemas and collects their named
// parts as components. Responses are strict (additionalProperties false,
// every field without omitempty required: the document says exactly what
// is sent); request bodies accept unknown properties, as the handlers
// ignore them, require only the fields tagged `jsonschema:"required"`,
// and are named with a "Request" suffix so that a type used both ways
// gets two components. A pointer field without omitempty may be null in
// either (nullable).
type schemaGen struct {
	components map[string]any
	resp, req  *jsonschema.Reflector
	types      map[string]reflect.Type // the Go type of each component
	conflict   error                   // two Go types got one name
}

func newSchemaGen() *schemaGen {
	g := &schemaGen{components: map[string]any{}, types: map[string]reflect.Type{}}
	g.resp = &jsonschema.Reflector{Anonymous: true, Mapper: mapType, Namer: g.namer("")}
	g.req = &jsonschema.Reflector{Anonymous: true, AllowAdditionalProperties: true, RequiredFromJSONSchemaTags: true,
		Mapper: mapType, Namer: g.namer("Request")}
	return g
}

// namer names components after schemaName, with suffix unless the name
// has it or ends in "Input", and notes a name given to two Go types.
func (g *schemaGen) namer(suffix string) func(reflect.Type) string {
	return func(t reflect.Type) string {
		if t.Name() == "" {
			return "" // unnamed: inlined, never a component
		}
		n := schemaName(t)
		if suffix != "" && !strings.HasSuffix(n, suffix) && !strings.HasSuffix(n, "Input") {
			n += suffix
		}
		if old, ok := g.types[n]; ok && old != t && g.conflict == nil {
			g.conflict = fmt.Errorf("the Go types %v and %v are both named %s in the document", old, t, n)
		}
		g.types[n] = t
		return n
	}
}

var (
	rawMessageType = reflect.TypeOf(json.RawMessage(nil))
	timeType       = reflect.TypeOf(time.Time{})
	numberType     = reflect.TypeOf(json.Number(""))
	anyType        = reflect.TypeOf((*any)(nil)).Elem()
)

// mapType gives the schema of types the reflector would get wrong (raw
// JSON is any JSON value, not base64 bytes) and of the enums docEnum
// lists.
func mapType(t reflect.Type) *jsonschema.Schema {
	switch t {
	case rawMessageType:
		return &jsonschema.Schema{}
	case timeType:
		return &jsonschema.Schema{Type: "string", Format: "date-time"}
	case numberType:
		return &jsonschema.Schema{Type: "number"}
	}
	if values, ok := apikit.EnumTypes[t]; ok {
		return &jsonschema.Schema{Type: "string", Enum: slices.Clone(values)} // a field's enum tags append to it
	}
	return nil
}

// schemaName names a component after its Go type: the package's name and
// the type's ("TogglesCreateInput"; httpapi's own types without the
// package), generic instances after their arguments
// (pageResponse[toggleItem] → "ToggleItemPageResponse").
func schemaName(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		var args strings.Builder
		for _, arg := range splitTypeArgs(name[i+1 : len(name)-1]) {
			args.WriteString(qualifiedName(arg))
		}
		return args.String() + upperFirst(name[:i])
	}
	return qualifiedName(t.PkgPath() + "." + name)
}

// httpapiPath is this package's import path: its types and those of the
// packages under it (the areas' routes, apikit) keep their bare names.
var httpapiPath = reflect.TypeFor[api]().PkgPath()

// qualifiedName turns "github.com/x/tenantkit/toggles.CreateInput" into
// "TogglesCreateInput" (the types of httpapi and of the packages under it
// keep their bare name).
func qualifiedName(full string) string {
	full = strings.TrimPrefix(full, "*")
	full = strings.TrimPrefix(full, "[]")
	dot := strings.LastIndexByte(full, '.')
	if dot < 0 {
		return upperFirst(full)
	}
	pkgPath, name := full[:dot], full[dot+1:]
	pkg := path.Base(pkgPath)
	if pkgPath == httpapiPath || strings.HasPrefix(pkgPath, httpapiPath+"/") || pkg == "." {
		return upperFirst(name)
	}
	return upperFirst(pkg) + upperFirst(name)
}

// splitTypeArgs splits a generic's argument list at its top-level commas.
func splitTypeArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func (g *schemaGen) response(t reflect.Type) (any, error) { return g.reflect(g.resp, t) }
func (g *schemaGen) request(t reflect.Type) (any, error)  { return g.reflect(g.req, t) }

// reflect returns the schema of t (a $ref to a component for named
// structs) and adds the components it names.
func (g *schemaGen) reflect(r *jsonschema.Reflector, t reflect.Type) (any, error) {
	s := r.ReflectFromType(t)
	defer g.nullables(t, r.Namer, map[reflect.Type]bool{})
	defs := s.Definitions
	s.Definitions = nil
	s.Version = ""
	if g.conflict != nil {
		return nil, g.conflict
	}
	for name, def := range defs {
		if _, ok := g.components[name]; ok {
			continue
		}
		m, err := toJSONMap(def)
		if err != nil {
			return nil, err
		}
		g.components[name] = m
	}
	return toJSONMap(s)
}

// toJSONMap turns a reflected schema into plain JSON values, with its
// references pointing into the document's components.
func toJSONMap(s *jsonschema.Schema) (any, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	data = bytes.ReplaceAll(data, []byte(`"#/$defs/`), []byte(`"#/components/schemas/`))
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return portableSchema(v), nil
}

// nullables lets the properties of t's named structs that encoding/json
// may write as null (pointer fields without omitempty) be null.
func (g *schemaGen) nullables(t reflect.Type, namer func(reflect.Type) string, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t == timeType {
		return
	}
	seen[t] = true
	var props map[string]any
	if t.Name() != "" {
		if comp, ok := g.components[namer(t)].(map[string]any); ok {
			props, _ = comp["properties"].(map[string]any)
		}
	}
	g.nullableFields(t, props, namer, seen)
}

func (g *schemaGen) nullableFields(t reflect.Type, props map[string]any, namer func(reflect.Type) string, seen map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")
		name := tag[0]
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" { // embedded: its fields are t's
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.nullableFields(ft, props, namer, seen)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if prop, ok := props[name]; ok && ft.Kind() == reflect.Pointer && !slices.Contains(tag[1:], "omitempty") {
			if m, ok := prop.(map[string]any); !ok || m["anyOf"] == nil {
				props[name] = map[string]any{"anyOf": []any{prop, map[string]any{"type": "null"}}}
			}
		}
		g.nullables(ft, namer, seen)
	}
}
