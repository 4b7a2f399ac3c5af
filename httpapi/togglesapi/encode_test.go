package togglesapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tenantkit/tenantkit/toggles"
)

// The boolean check writes its body by hand: the bytes must be those
// encoding/json's Encoder writes for a BooleanCheck, whatever the strings
// hold (HTML characters, quotes, control bytes, non-ASCII, invalid UTF-8).
func TestBooleanCheckJSON(t *testing.T) {
	for _, s := range []string{"", "bench.checkout-v2", "a<b>&c", `q"uo\te`, "tab\there", "\x00\x1f\x7f", "é ü 日本",
		"\u2028\u2029", "bad \xff utf-8", "01HXZ4K0Q6ZJ5V3W8Y9T2R1N0M"} {
		for _, c := range []BooleanCheck{
			{Enabled: true, Source: toggles.FromOverride, ToggleID: "t1", Identifier: s, TenantID: "tenant"},
			{Source: toggles.FromDefault, ToggleID: s, Identifier: "id", TenantID: s},
			{Enabled: true, Source: toggles.Source(s)},
		} {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(c); err != nil {
				t.Fatal(err)
			}
			if got := append(appendBooleanCheck(nil, &c), '\n'); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%q: wrote %s, encoding/json writes %s", s, got, want.Bytes())
			}
		}
	}
}

func FuzzBooleanCheckJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\xff", "\u2028"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, enabled bool) {
		c := BooleanCheck{Enabled: enabled, Source: toggles.FromOverride, ToggleID: s, Identifier: s, TenantID: s}
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendBooleanCheck(nil, &c); !bytes.Equal(got, want) {
			t.Fatalf("%q: wrote %s, encoding/json writes %s", s, got, want)
		}
	})
}
