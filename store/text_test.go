package store_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

func TestNULDetection(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`"plain"`, false},
		{`"a\u0000b"`, true},
		{`{"k":["x",{"deep":"\u0000"}]}`, true},
		{`{"\u0000key":1}`, true},
		{`"\\u0000"`, false}, // an escaped backslash, then the text u0000
		{`{"broken":`, false},
		{`null`, false},
	} {
		if got := store.JSONHasNUL([]byte(tc.json)); got != tc.want {
			t.Errorf("JSONHasNUL(%s) = %v, want %v", tc.json, got, tc.want)
		}
	}
	if !store.HasNUL("a\x00") || store.HasNUL("a") {
		t.Error("HasNUL is wrong")
	}
}
