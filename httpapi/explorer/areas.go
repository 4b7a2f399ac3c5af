package explorer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxOperations is the most operations a document may have for Swagger UI
// (SwaggerUIVersion) to render them all: with one more it renders no
// operation past the first tag, without an error. The explorer shows the
// API one area at a time (Page with areas, AreaDocument) so that each
// document stays below it.
const MaxOperations = 136

// DefaultArea is the area of the operations that have no tag, as Swagger
// UI names their group.
const DefaultArea = "default"

// methods are the keys of a path item that are operations.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Areas returns the areas of an OpenAPI document: the names of its tags
// that some operation carries, in the order of the document's tags list,
// then the tags that operations carry without the list naming them, in
// order of first use, then DefaultArea when some operation has no tag.
// Every operation is in at least one area (in each of its tags').
func Areas(doc []byte) ([]string, error) {
	d, err := parseDoc(doc)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	var inOrder []string
	untagged := false
	for _, path := range d.paths {
		for _, op := range path.ops {
			if len(op.tags) == 0 {
				untagged = true
			}
			for _, tag := range op.tags {
				if !used[tag] {
					used[tag] = true
					inOrder = append(inOrder, tag)
				}
			}
		}
	}
	var areas []string
	for _, tag := range d.tagNames {
		if used[tag] && !slices.Contains(areas, tag) {
			areas = append(areas, tag)
		}
	}
	for _, tag := range inOrder {
		if !slices.Contains(areas, tag) {
			areas = append(areas, tag)
		}
	}
	if untagged && !slices.Contains(areas, DefaultArea) {
		areas = append(areas, DefaultArea)
	}
	return areas, nil
}

// AreaDocument returns the part of an OpenAPI document that one area
// (see Areas) covers: the operations tagged area (for DefaultArea, also
// those without a tag), their path items' shared fields (parameters,
// summary, servers), the area's entry of the tags list, and of
// components.schemas only the schemas that what is kept refers to,
// directly or through other schemas. Everything else (openapi, info,
// servers, security, the other components) is kept as it is, in the
// document's order, so that the part is a valid document that reads like
// the whole. ok is false when no operation is in the area.
// An area of an API stays far below MaxOperations, which the whole of
// a large one passes.
func AreaDocument(doc []byte, area string) (part []byte, ok bool, err error) {
	d, err := parseDoc(doc)
	if err != nil {
		return nil, false, err
	}
	in := func(o operation) bool {
		return slices.Contains(o.tags, area) || (area == DefaultArea && len(o.tags) == 0)
	}
	var paths object
	for _, path := range d.paths {
		var item object
		kept := 0
		for _, m := range path.item {
			if i := slices.IndexFunc(path.ops, func(o operation) bool { return o.method == m.key }); i >= 0 {
				if !in(path.ops[i]) {
					continue
				}
				kept++
			}
			item = append(item, m)
		}
		if kept > 0 {
			raw, err := item.marshal()
			if err != nil {
				return nil, false, err
			}
			paths = append(paths, member{path.key, raw})
		}
	}
	if len(paths) == 0 {
		return nil, false, nil
	}

	out := make(object, 0, len(d.top))
	for _, m := range d.top {
		switch m.key {
		case "paths":
			raw, err := paths.marshal()
			if err != nil {
				return nil, false, err
			}
			m.value = raw
		case "tags":
			var tags []json.RawMessage
			if err := json.Unmarshal(m.value, &tags); err != nil {
				return nil, false, fmt.Errorf("explorer: the document's tags: %w", err)
			}
			tags = slices.DeleteFunc(tags, func(t json.RawMessage) bool {
				var tag struct{ Name string }
				return json.Unmarshal(t, &tag) != nil || tag.Name != area
			})
			if len(tags) == 0 {
				continue
			}
			raw, err := json.Marshal(tags)
			if err != nil {
				return nil, false, err
			}
			m.value = raw
		case "components":
			raw, err := pruneSchemas(m.value, d.top, paths)
			if err != nil {
				return nil, false, err
			}
			m.value = raw
		}
		out = append(out, m)
	}
	part, err = out.marshal()
	return part, err == nil, err
}

// pruneSchemas returns components with only the schemas that the rest of
// the document (top, with its paths replaced by paths) refers to, directly
// or through other schemas.
func pruneSchemas(components json.RawMessage, top object, paths object) (json.RawMessage, error) {
	comps, err := parseObject(components)
	if err != nil {
		return nil, fmt.Errorf("explorer: the document's components: %w", err)
	}
	i := slices.IndexFunc(comps, func(m member) bool { return m.key == "schemas" })
	if i < 0 {
		return components, nil
	}
	schemas, err := parseObject(comps[i].value)
	if err != nil {
		return nil, fmt.Errorf("explorer: the document's components.schemas: %w", err)
	}
	byName := make(map[string]json.RawMessage, len(schemas))
	for _, s := range schemas {
		byName[s.key] = s.value
	}
	const prefix = "#/components/schemas/"
	reached := map[string]bool{}
	var queue []string
	visit := func(raw json.RawMessage) error {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		for ref := range refs(v) {
			name, ok := strings.CutPrefix(ref, prefix)
			if !ok {
				continue
			}
			name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
			if !reached[name] {
				reached[name] = true
				queue = append(queue, name)
			}
		}
		return nil
	}
	// Everything but the schemas themselves: the paths kept, and the other
	// components and top-level fields, kept whole.
	for _, m := range top {
		switch m.key {
		case "paths":
			for _, p := range paths {
				if err := visit(p.value); err != nil {
					return nil, err
				}
			}
		case "components":
			for j, c := range comps {
				if j != i {
					if err := visit(c.value); err != nil {
						return nil, err
					}
				}
			}
		default:
			if err := visit(m.value); err != nil {
				return nil, err
			}
		}
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if raw, ok := byName[name]; ok {
			if err := visit(raw); err != nil {
				return nil, err
			}
		}
	}
	schemas = slices.DeleteFunc(schemas, func(m member) bool { return !reached[m.key] })
	raw, err := schemas.marshal()
	if err != nil {
		return nil, err
	}
	comps[i].value = raw
	return comps.marshal()
}

// refs yields the $ref strings anywhere in v.
func refs(v any) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		var walk func(v any) bool
		walk = func(v any) bool {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if s, ok := x.(string); ok && k == "$ref" {
						if !yield(s) {
							return false
						}
					} else if !walk(x) {
						return false
					}
				}
			case []any:
				for _, x := range v {
					if !walk(x) {
						return false
					}
				}
			}
			return true
		}
		walk(v)
	}
}

// parsedDoc is what Areas and AreaDocument read of a document.
type parsedDoc struct {
	top      object
	tagNames []string
	paths    []parsedPath
}

type parsedPath struct {
	key  string
	item object
	ops  []operation
}

type operation struct {
	method string
	tags   []string
}

func parseDoc(doc []byte) (*parsedDoc, error) {
	top, err := parseObject(doc)
	if err != nil {
		return nil, fmt.Errorf("explorer: the OpenAPI document: %w", err)
	}
	d := &parsedDoc{top: top}
	for _, m := range top {
		switch m.key {
		case "tags":
			var tags []struct{ Name string }
			if err := json.Unmarshal(m.value, &tags); err != nil {
				return nil, fmt.Errorf("explorer: the document's tags: %w", err)
			}
			for _, t := range tags {
				d.tagNames = append(d.tagNames, t.Name)
			}
		case "paths":
			paths, err := parseObject(m.value)
			if err != nil {
				return nil, fmt.Errorf("explorer: the document's paths: %w", err)
			}
			for _, p := range paths {
				item, err := parseObject(p.value)
				if err != nil {
					return nil, fmt.Errorf("explorer: the document's path %s: %w", p.key, err)
				}
				pp := parsedPath{key: p.key, item: item}
				for _, f := range item {
					if !slices.Contains(methods, f.key) {
						continue
					}
					var op struct{ Tags []string }
					if err := json.Unmarshal(f.value, &op); err != nil {
						return nil, fmt.Errorf("explorer: the document's %s %s: %w", f.key, p.key, err)
					}
					pp.ops = append(pp.ops, operation{f.key, op.Tags})
				}
				d.paths = append(d.paths, pp)
			}
		}
	}
	return d, nil
}

// object is a JSON object's members in their order.
type object []member

type member struct {
	key   string
	value json.RawMessage
}

// parseObject reads a JSON object's members, keeping their order.
func parseObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var obj object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // an object's keys are strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		obj = append(obj, member{key, raw})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// marshal writes the members in order, compactly.
func (o object) marshal() (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		key, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		buf.Write(key)
		buf.WriteByte(':')
		if err := json.Compact(&buf, m.value); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
