package dashboards_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/store"
)

// FuzzDecodeWidgets: the layout decoder never panics, fails only with a
// validation error, and what it accepts survives a round trip (encoding
// the widgets and decoding them again gives the same widgets).
func FuzzDecodeWidgets(f *testing.F) {
	for _, seed := range []string{
		`[]`, `null`, `{}`, `[1]`, `[{}]`, `"x"`,
		`[{"id":"0b0e7a52-5c4e-4a8e-9d1e-3f1a2b3c4d5e","definitionId":"a","grid":{"x":0,"y":0,"w":1,"h":1},"config":{}}]`,
		`[{"id":"x","definitionId":"a","grid":{"x":1.5,"y":"0","w":0,"h":-1},"config":[1]}]`,
		`[{"id":null,"definitionId":7,"grid":null}]`,
		`[{"id":"a","definitionId":"b","grid":{"x":2.0,"y":1e3,"w":9999999999,"h":1}}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		widgets, err := dashboards.DecodeWidgets(raw)
		if err != nil {
			var ve *store.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("DecodeWidgets(%q) failed with %T %v, want a ValidationError", raw, err, err)
			}
			return
		}
		again, err := json.Marshal(widgets)
		if err != nil {
			t.Fatalf("accepted widgets do not encode: %v", err)
		}
		round, err := dashboards.DecodeWidgets(again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if !reflect.DeepEqual(normal(t, widgets), normal(t, round)) {
			t.Fatalf("round trip changed the widgets:\n%+v\n%+v", widgets, round)
		}
	})
}

// normal re-encodes configs compactly so that whitespace does not count.
func normal(t *testing.T, ws []dashboards.Widget) []dashboards.Widget {
	out := make([]dashboards.Widget, len(ws))
	for i, w := range ws {
		var v any
		if err := json.Unmarshal(w.Config, &v); err != nil {
			t.Fatalf("config %q is not JSON: %v", w.Config, err)
		}
		w.Config, _ = json.Marshal(v)
		out[i] = w
	}
	return out
}
