package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/google/uuid"
	"github.com/tenantkit/tenantkit/store"
)

// DecodeWidgets reads a layout's widgets from JSON (the value of the
// "widgets" member of PUT /dashboards/layout), naming the element and
// field of each problem: "widgets[2].grid.w". It checks types and
// presence: id and definitionId strings, grid an object with the four
// integers x, y, w and h, config an object (absent or null means {}).
// Values are checked by the Service (PutLayout), with the same names.
func DecodeWidgets(raw json.RawMessage) ([]Widget, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, store.Invalid("widgets", "is required")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, store.Invalid("widgets", "must be an array")
	}
	if len(elems) > MaxWidgets {
		return nil, store.Invalid("widgets", fmt.Sprintf("must hold at most %d widgets", MaxWidgets))
	}
	v := &store.ValidationError{}
	widgets := make([]Widget, len(elems))
	for i, elem := range elems {
		at := fmt.Sprintf("widgets[%d]", i)
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(elem, &fields); err != nil || fields == nil {
			v.Add(at, "must be an object")
			continue
		}
		w := &widgets[i]
		w.ID = decodeString(v, at+".id", fields["id"])
		w.DefinitionID = decodeString(v, at+".definitionId", fields["definitionId"])
		w.Grid = decodeGrid(v, at+".grid", fields["grid"])
		switch cfg := bytes.TrimSpace(fields["config"]); {
		case len(cfg) == 0 || string(cfg) == "null":
			w.Config = json.RawMessage(`{}`)
		case cfg[0] != '{':
			v.Add(at+".config", "must be an object")
		default:
			w.Config = json.RawMessage(cfg)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return widgets, nil
}

func decodeString(v *store.ValidationError, field string, raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		v.Add(field, "is required")
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		v.Add(field, "must be a string")
	}
	return s
}

func decodeGrid(v *store.ValidationError, field string, raw json.RawMessage) Grid {
	if len(raw) == 0 || string(raw) == "null" {
		v.Add(field, "is required")
		return Grid{}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		v.Add(field, "must be an object with x, y, w and h")
		return Grid{}
	}
	var g Grid
	for _, c := range []struct {
		name string
		dst  *int
	}{{"x", &g.X}, {"y", &g.Y}, {"w", &g.W}, {"h", &g.H}} {
		n, msg := decodeInt(fields[c.name])
		if msg != "" {
			v.Add(field+"."+c.name, msg)
		}
		*c.dst = n
	}
	return g
}

// decodeInt reads a JSON number that is a whole number (2 and 2.0 are; 2.5
// and "2" are not).
func decodeInt(raw json.RawMessage) (int, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, "is required"
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, "must be an integer" // json.Number would also take "2", quoted
	}
	var num json.Number
	if err := json.Unmarshal(raw, &num); err != nil {
		return 0, "must be an integer"
	}
	if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		if n > math.MaxInt32 || n < math.MinInt32 {
			return 0, "is out of range"
		}
		return int(n), ""
	}
	f, err := num.Float64()
	if err != nil || f != math.Trunc(f) {
		return 0, "must be an integer"
	}
	if f > math.MaxInt32 || f < math.MinInt32 {
		return 0, "is out of range"
	}
	return int(f), ""
}

// checkGrid returns what is wrong with g, "" when nothing.
func checkGrid(g Grid) string {
	switch {
	case g.X < 0 || g.Y < 0:
		return "x and y must be at least 0"
	case g.W < 1 || g.H < 1:
		return "w and h must be at least 1"
	case g.X > MaxGridCoordinate || g.Y > MaxGridCoordinate:
		return fmt.Sprintf("x and y must be at most %d", MaxGridCoordinate)
	case g.W > MaxGridSize || g.H > MaxGridSize:
		return fmt.Sprintf("w and h must be at most %d", MaxGridSize)
	}
	return ""
}

// validateLayout checks widgets' values against the definitions the
// caller sees, naming each problem "widgets[i].field", and returns them
// normalised (ids lower-cased, config {} when empty).
func validateLayout(widgets []Widget, visible map[string]bool, known func(string) bool) ([]Widget, error) {
	if len(widgets) > MaxWidgets {
		return nil, store.Invalid("widgets", fmt.Sprintf("must hold at most %d widgets", MaxWidgets))
	}
	v := &store.ValidationError{}
	out := make([]Widget, len(widgets))
	seen := map[string]int{}
	for i, w := range widgets {
		at := fmt.Sprintf("widgets[%d]", i)
		if id, err := uuid.Parse(w.ID); err != nil || len(w.ID) != 36 {
			v.Add(at+".id", "must be a UUID")
		} else {
			w.ID = id.String()
			if j, dup := seen[w.ID]; dup {
				v.Add(at+".id", fmt.Sprintf("duplicates widgets[%d].id", j))
			}
			seen[w.ID] = i
		}
		switch {
		case w.DefinitionID == "":
			v.Add(at+".definitionId", "is required")
		case !known(w.DefinitionID):
			v.Add(at+".definitionId", fmt.Sprintf("unknown widget %q", truncate(w.DefinitionID)))
		case !visible[w.DefinitionID]:
			v.Add(at+".definitionId", fmt.Sprintf("widget %q is not available to the caller", w.DefinitionID))
		}
		addGridProblems(v, at+".grid", w.Grid)
		switch {
		case len(w.Config) == 0 || string(bytes.TrimSpace(w.Config)) == "null":
			w.Config = json.RawMessage(`{}`)
		case len(w.Config) > MaxConfigBytes:
			v.Add(at+".config", fmt.Sprintf("must be at most %d bytes", MaxConfigBytes))
		case !isObject(w.Config):
			v.Add(at+".config", "must be an object")
		case store.JSONHasNUL(w.Config):
			v.Add(at+".config", "must not contain NUL characters")
		default:
			w.Config = compact(w.Config)
		}
		out[i] = w
	}
	return out, v.Err()
}

func addGridProblems(v *store.ValidationError, at string, g Grid) {
	for _, c := range []struct {
		name     string
		n, lo, h int
	}{{"x", g.X, 0, MaxGridCoordinate}, {"y", g.Y, 0, MaxGridCoordinate}, {"w", g.W, 1, MaxGridSize}, {"h", g.H, 1, MaxGridSize}} {
		if c.n < c.lo || c.n > c.h {
			v.Add(at+"."+c.name, fmt.Sprintf("must be between %d and %d", c.lo, c.h))
		}
	}
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// truncate shortens an echoed value to 60 characters.
func truncate(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
