package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// writeDocMarkdown renders the OpenAPI document as Markdown: one section per
// area, and for every operation its credentials and features, its
// parameters, its request body with an example, its responses and an
// example request. It reads only the document, so the two say the same.
func writeDocMarkdown(buf *bytes.Buffer, doc *openAPI) {
	fmt.Fprintf(buf, "# %s\n\n%s\n\n", doc.Info.Title, doc.Info.Description)
	buf.WriteString("Every example sends an API key in `X-Api-Key`; `Authorization: ApiKey <key>` and `Authorization: Bearer <session token>` work as well.\n\n")
	buf.WriteString("## Contents\n\n")
	for _, tag := range doc.Tags {
		fmt.Fprintf(buf, "- [%s](#%s)\n", tag.Name, anchor(tag.Name))
	}
	buf.WriteString("\n")
	for _, tag := range doc.Tags {
		fmt.Fprintf(buf, "## %s\n\n", tag.Name)
		if tag.Description != "" {
			fmt.Fprintf(buf, "%s\n\n", tag.Description)
		}
		for _, op := range doc.order {
			if op.Tags[0] == tag.Name {
				writeOperation(buf, doc, op)
			}
		}
	}
}

// anchor is the heading anchor GitHub-style renderers give a title.
func anchor(title string) string {
	return strings.ReplaceAll(strings.ToLower(title), " ", "-")
}

func writeOperation(buf *bytes.Buffer, doc *openAPI, op *operation) {
	fmt.Fprintf(buf, "### %s %s\n\n%s\n\n", op.method, op.path, op.Summary)
	if op.details != "" {
		fmt.Fprintf(buf, "%s\n\n", op.details)
	}
	switch {
	case op.public:
		buf.WriteString("- Credential: none (public)\n")
	case op.optionalAuth:
		buf.WriteString("- Credential: optional (an API key or a session token; without one only public files are served)\n")
	default:
		buf.WriteString("- Credential: an API key or a session token\n")
	}
	if op.SuperAdmin {
		buf.WriteString("- Caller: a super admin\n")
	}
	if op.TenantWide {
		buf.WriteString("- Scope: the whole tenant (it changes a setting of every organization; a caller limited to some organizations gets 403)\n")
	}
	if len(op.RequiredFeatures) > 0 {
		fmt.Fprintf(buf, "- Features: `%s`\n", strings.Join(op.RequiredFeatures, "`, `"))
	}
	buf.WriteString("\n")
	if len(op.Parameters) > 0 {
		buf.WriteString("| Parameter | In | Type | Required | Description |\n|---|---|---|---|---|\n")
		for _, p := range op.Parameters {
			typ, _ := p.Schema["type"].(string)
			if enum, ok := p.Schema["enum"].([]string); ok {
				typ += ": " + strings.Join(enum, ", ")
			}
			fmt.Fprintf(buf, "| `%s` | %s | %s | %s | %s |\n", p.Name, p.In, typ, yesNo(p.Required), apikit.MarkdownCell(p.Description))
		}
		buf.WriteString("\n")
	}
	var example string
	if op.RequestBody != nil {
		for _, ct := range sortedKeys(op.RequestBody.Content) {
			fmt.Fprintf(buf, "Request body (`%s`", ct)
			if !op.RequestBody.Required {
				buf.WriteString(", optional")
			}
			buf.WriteString(")")
			if ct == "application/json" {
				example = exampleJSON(doc, op.RequestBody.Content[ct])
				fmt.Fprintf(buf, ", for example:\n\n```json\n%s\n```\n\n", example)
			} else {
				buf.WriteString(".\n\n")
			}
		}
	}
	buf.WriteString("| Status | Meaning |\n|---|---|\n")
	for _, status := range sortedKeys(op.Responses) {
		r := op.Responses[status]
		types := sortedKeys(r.Content)
		desc := apikit.MarkdownCell(r.Description)
		if len(types) > 0 {
			desc += " (" + strings.Join(types, ", ") + ")"
		}
		fmt.Fprintf(buf, "| %s | %s |\n", status, desc)
	}
	buf.WriteString("\nExample request:\n\n```sh\n")
	fmt.Fprintf(buf, "curl -X %s 'http://localhost:8080%s'", op.method, op.path)
	if !op.public {
		buf.WriteString(" \\\n  -H \"X-Api-Key: $TENANTKIT_API_KEY\"")
	}
	if example != "" {
		fmt.Fprintf(buf, " \\\n  -H 'Content-Type: application/json' \\\n  -d '%s'", strings.ReplaceAll(compactJSON(example), "'", `'\''`))
	}
	buf.WriteString("\n```\n\n")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func compactJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return s
	}
	return buf.String()
}

// exampleJSON is a request body's example: the route's own, or one made
// from its schema: its required
// properties (all of them when it requires none), the first of an enum,
// a string's format or its name, a number's minimum.
func exampleJSON(doc *openAPI, media *apikit.MediaType) string {
	v := media.Example
	if v == nil {
		v = exampleValue(doc, media.Schema, "", 0)
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(data)
}

func exampleValue(doc *openAPI, schema any, name string, depth int) any {
	s, ok := schema.(map[string]any)
	if !ok || depth > 6 {
		return nil
	}
	if r, ok := s["$ref"].(string); ok {
		return exampleValue(doc, doc.Components.Schemas[strings.TrimPrefix(r, "#/components/schemas/")], name, depth+1)
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			return exampleValue(doc, alts[0], name, depth+1)
		}
	}
	switch typ, _ := s["type"].(string); typ {
	case "object", "":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			return map[string]any{}
		}
		out := map[string]any{}
		var required []string
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				required = append(required, r.(string))
			}
		}
		for key, prop := range props {
			if len(required) > 0 && !slices.Contains(required, key) {
				continue
			}
			out[key] = exampleValue(doc, prop, key, depth+1)
		}
		return out
	case "array":
		return []any{exampleValue(doc, s["items"], name, depth+1)}
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	default:
		if f, ok := s["format"].(string); ok {
			switch f {
			case "date-time":
				return "2026-01-01T00:00:00Z"
			case "email":
				return "user@example.com"
			case "uri":
				return "https://example.com/hook"
			case "uuid":
				return "00000000-0000-4000-8000-000000000000"
			}
		}
		return cmp.Or(name, "text")
	}
}
