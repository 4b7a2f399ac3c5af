package explorer_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/explorer"
)

// largeDocument is an OpenAPI 3.1 document of 8 tags × 30 operations (240,
// well past explorer.MaxOperations), one operation with two tags, one
// without a tag, and a chain of schemas (Item_k refers to Part_k, which
// refers to Leaf) that only tag k's operations use, beside Unused.
func largeDocument(t *testing.T) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"openapi":"3.1.0","info":{"title":"Large","version":"1"},"servers":[{"url":"/api"}],"tags":[`)
	for k := 7; k >= 0; k-- { // listed in reverse: Areas follows the list
		fmt.Fprintf(&b, `{"name":"Tag %d","description":"the %d<th> & last"}`, k, k)
		if k > 0 {
			b.WriteString(",")
		}
	}
	b.WriteString(`],"paths":{`)
	for k := range 8 {
		for i := range 15 {
			fmt.Fprintf(&b, `"/t%d/items%02d":{"parameters":[{"name":"x","in":"query","schema":{"type":"string"}}],`, k, i)
			for j, m := range []string{"get", "post"} {
				fmt.Fprintf(&b, `"%s":{"tags":["Tag %d"],"operationId":"op%d_%d_%d","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Item_%d"}}}}}}`, m, k, k, i, j, k)
				if j == 0 {
					b.WriteString(",")
				}
			}
			b.WriteString("},")
		}
	}
	b.WriteString(`"/both":{"get":{"tags":["Tag 1","Tag 2"],"responses":{"204":{"description":"none"}}}},`)
	b.WriteString(`"/untagged":{"delete":{"responses":{"204":{"description":"none"}}}}},"components":{"schemas":{`)
	for k := range 8 {
		fmt.Fprintf(&b, `"Item_%d":{"type":"object","properties":{"p":{"$ref":"#/components/schemas/Part_%d"}}},`, k, k)
		fmt.Fprintf(&b, `"Part_%d":{"type":"array","items":{"$ref":"#/components/schemas/Leaf"}},`, k)
	}
	b.WriteString(`"Leaf":{"type":"string"},"Unused":{"type":"integer"}},`)
	b.WriteString(`"securitySchemes":{"key":{"type":"apiKey","in":"header","name":"X-Api-Key"}}},"security":[{"key":[]}]}`)
	if !json.Valid([]byte(b.String())) {
		t.Fatalf("the large document is not JSON:\n%s", b.String())
	}
	return []byte(b.String())
}

type partDoc struct {
	Tags       []struct{ Name, Description string }
	Paths      map[string]map[string]json.RawMessage
	Components struct {
		Schemas         map[string]json.RawMessage
		SecuritySchemes map[string]json.RawMessage
	}
	Security []map[string][]string
	Servers  []struct{ URL string }
}

func TestAreas(t *testing.T) {
	doc := largeDocument(t)
	areas, err := explorer.Areas(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Tag 7", "Tag 6", "Tag 5", "Tag 4", "Tag 3", "Tag 2", "Tag 1", "Tag 0", explorer.DefaultArea}
	if !slices.Equal(areas, want) {
		t.Fatalf("Areas = %q, want %q", areas, want)
	}
	// A tag the list does not name comes after those it does; a listed tag
	// without operations is no area.
	areas, err = explorer.Areas([]byte(`{"tags":[{"name":"Empty"},{"name":"B"}],"paths":{"/a":{"get":{"tags":["A"]}},"/b":{"get":{"tags":["B"]}}}}`))
	if err != nil || !slices.Equal(areas, []string{"B", "A"}) {
		t.Errorf("Areas = %q, %v; want [B A]", areas, err)
	}
	for _, bad := range []string{``, `[]`, `{"paths":[]}`, `{"paths":{"/a":{"get":{"tags":"A"}}}}`, `{"tags":{}}`, `{} {}`} {
		if _, err := explorer.Areas([]byte(bad)); err == nil {
			t.Errorf("Areas(%s): no error", bad)
		}
	}
}

// TestAreaDocument: each area's part of a 242-operation document holds
// exactly that area's operations, at most MaxOperations, in the
// document's order, with the schemas they use and no other; together the
// parts hold every operation.
func TestAreaDocument(t *testing.T) {
	doc := largeDocument(t)
	var whole partDoc
	if err := json.Unmarshal(doc, &whole); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, item := range whole.Paths {
		total += len(item) - btoi(item["parameters"] != nil)
	}
	if total < 200 || total <= explorer.MaxOperations {
		t.Fatalf("the large document has %d operations", total)
	}
	areas, _ := explorer.Areas(doc)
	seen := map[string]int{}
	for _, area := range areas {
		raw, ok, err := explorer.AreaDocument(doc, area)
		if err != nil || !ok {
			t.Fatalf("AreaDocument(%q) = %v, %v", area, ok, err)
		}
		var part partDoc
		if err := json.Unmarshal(raw, &part); err != nil {
			t.Fatalf("%s: %v", area, err)
		}
		n := 0
		for p, item := range part.Paths {
			for m, op := range item {
				if m == "parameters" {
					continue
				}
				var o struct{ Tags []string }
				_ = json.Unmarshal(op, &o)
				if !slices.Contains(o.Tags, area) && (area != explorer.DefaultArea || len(o.Tags) > 0) {
					t.Errorf("%s lists %s %s, tagged %v", area, m, p, o.Tags)
				}
				seen[m+" "+p]++
				n++
			}
			if strings.HasPrefix(p, "/t") && item["parameters"] == nil {
				t.Errorf("%s: %s lost its path item's parameters", area, p)
			}
		}
		if n > explorer.MaxOperations {
			t.Errorf("%s has %d operations", area, n)
		}
		wantTags := 1
		if area == explorer.DefaultArea {
			wantTags = 0
		}
		if len(part.Tags) != wantTags || (wantTags == 1 && part.Tags[0].Name != area) {
			t.Errorf("%s: tags %+v", area, part.Tags)
		}
		if len(part.Servers) != 1 || part.Servers[0].URL != "/api" || len(part.Security) != 1 || part.Components.SecuritySchemes["key"] == nil {
			t.Errorf("%s: servers, security or security schemes lost: %s", area, raw)
		}
		var schemas []string
		for name := range part.Components.Schemas {
			schemas = append(schemas, name)
		}
		slices.Sort(schemas)
		var wantSchemas []string
		if k, ok := strings.CutPrefix(area, "Tag "); ok {
			wantSchemas = []string{"Item_" + k, "Leaf", "Part_" + k}
		}
		if !slices.Equal(schemas, wantSchemas) {
			t.Errorf("%s: schemas %v, want %v", area, schemas, wantSchemas)
		}
		if area == "Tag 0" {
			// The document's order: /t0/items00 first, get before post.
			if i, j := strings.Index(string(raw), `"/t0/items00"`), strings.Index(string(raw), `"/t0/items01"`); i < 0 || j < i {
				t.Errorf("Tag 0: paths out of order: %.300s", raw)
			}
			if i, j := strings.Index(string(raw), `"op0_0_0"`), strings.Index(string(raw), `"op0_0_1"`); i < 0 || j < i {
				t.Errorf("Tag 0: methods out of order")
			}
		}
	}
	if len(seen) != total {
		t.Errorf("the areas hold %d of %d operations", len(seen), total)
	}
	if seen["get /both"] != 2 {
		t.Errorf("the operation with two tags is in %d areas, want 2", seen["get /both"])
	}
	if _, ok, err := explorer.AreaDocument(doc, "Nope"); ok || err != nil {
		t.Errorf("AreaDocument(Nope) = %v, %v; want no part", ok, err)
	}
	if _, _, err := explorer.AreaDocument([]byte(`{"paths":`), "A"); err == nil {
		t.Error("AreaDocument of broken JSON: no error")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
