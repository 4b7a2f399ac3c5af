package entities

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// A record's event data is json.Marshal(eventOf(r)), byte for byte.
func TestRecordEventJSON(t *testing.T) {
	deleted := time.Date(2026, 11, 25, 21, 5, 0, 123456000, time.UTC)
	for _, r := range []*Record{
		{ID: "01a2214e-e813-7405-96ea-5867931b8e59", EntityID: "rec.e_1", TenantID: "t1", OrganizationID: "o1",
			Values:    map[string]any{"title": "Item <1>", "n": 2.0, "ok": true, "tags": []any{"a", "b"}, "none": nil},
			CreatedAt: time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 25, 21, 5, 1, 500000000, time.UTC)},
		{ID: "x", EntityID: "y", TenantID: "t\u2028", Values: nil, CreatedAt: time.Unix(0, 1).UTC(), UpdatedAt: deleted, DeletedAt: &deleted},
		{ID: "z", Values: map[string]any{}, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)), UpdatedAt: time.Time{}},
		{ID: "far", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // json.Marshal fails
	} {
		want, werr := json.Marshal(eventOf(r))
		got, gerr := recordEventJSON(r)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("record %s: wrote %s (%v), json.Marshal %s (%v)", r.ID, got, gerr, want, werr)
		}
	}
}

// isUUIDText is uuidPattern's match.
func TestIsUUIDText(t *testing.T) {
	for _, s := range []string{"", "01a2214e-e813-7405-96ea-5867931b8e59", "01A2214E-E813-7405-96EA-5867931B8E59",
		"01a2214e-e813-7405-96ea-5867931b8e5", "01a2214e-e813-7405-96ea-5867931b8e590", "01a2214ee813-7405-96ea-5867931b8e59-",
		"g1a2214e-e813-7405-96ea-5867931b8e59", "01a2214e-e813-7405-96ea-5867931b8e5\n", "01a2214e_e813_7405_96ea_5867931b8e59",
		"01a2214e-e813-7405-96ea-5867931b8é", "not-a-uuid", "00000000-0000-0000-0000-000000000000"} {
		if got, want := isUUIDText(s), uuidPattern.MatchString(s); got != want {
			t.Errorf("%q: %v, the pattern %v", s, got, want)
		}
	}
}

func FuzzIsUUIDText(f *testing.F) {
	f.Add("01a2214e-e813-7405-96ea-5867931b8e59")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isUUIDText(s), uuidPattern.MatchString(s); got != want {
			t.Fatalf("%q: %v, the pattern %v", s, got, want)
		}
	})
}
