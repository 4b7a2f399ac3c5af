package rules

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Redact skips the copy only when the copy would be equal: checked against
// redactMap (which always copies) on random nested data.
func TestRedactSkipsOnlyUselessCopies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"id", "name", "password", "apiKey", "note", "items", "nested", "total"}
	values := []any{"x", "4111 1111 1111 1111", "4111 1111 1111 1112", 12.5, true, nil}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := r.IntN(6); {
		case n == 0 && depth < 8:
			m := map[string]any{}
			for range r.IntN(4) {
				m[keys[r.IntN(len(keys))]] = gen(depth + 1)
			}
			return m
		case n == 1 && depth < 8:
			s := make([]any, r.IntN(3))
			for i := range s {
				s[i] = gen(depth + 1)
			}
			return s
		default:
			return values[r.IntN(len(values))]
		}
	}
	copies := 0
	for i := range 5000 {
		data := map[string]any{}
		for range r.IntN(5) {
			data[keys[r.IntN(len(keys))]] = gen(1)
		}
		before := fmt.Sprint(data)
		got, want := Redact(data), redactMap(data, 0)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: Redact = %v, want %v", i, got, want)
		}
		if fmt.Sprint(data) != before {
			t.Fatalf("case %d: Redact modified its input", i)
		}
		if reflect.ValueOf(got).Pointer() != reflect.ValueOf(data).Pointer() {
			copies++
		}
	}
	if copies == 0 || copies == 5000 {
		t.Fatalf("%d of 5000 cases copied: the generator does not exercise both paths", copies)
	}
}

// secretKey's ASCII path agrees with the Unicode one.
func TestSecretKeyPaths(t *testing.T) {
	for _, c := range []struct {
		key    string
		secret bool
	}{
		{"id", false}, {"total", false}, {"", false}, {"password", true}, {"Password", true}, {"PASS_WORD", true},
		{"api-Key", true}, {"x_Api_KEY_y", true}, {"creditCard", true}, {"credit_card_number", true}, {"cvv2", true},
		{"authorization", true}, {"author", true}, {"pw", false}, {"tok_en", true}, {"to-ke", false},
		{strings.Repeat("a", 70) + "Token", true}, {strings.Repeat("a", 70), false},
		{"to\u212Aen", true}, // the Kelvin sign lower-cases to 'k'
		{"pässword", false}, {"ünd_secret", true},
	} {
		if got := secretKey(c.key); got != c.secret {
			t.Errorf("secretKey(%q) = %v, want %v", c.key, got, c.secret)
		}
		if got := secretKeyUnicode(c.key); got != c.secret {
			t.Errorf("secretKeyUnicode(%q) = %v, want %v", c.key, got, c.secret)
		}
	}
}

// secretKey finds every part at every place in a key, in any case and
// split by '_' and '-', and no part with a letter missing or changed: as
// the Unicode path's substring search does.
func TestSecretKeyEveryPart(t *testing.T) {
	for _, p := range secretKeyParts {
		for _, key := range []string{p, "x" + p, p + "9", "ab" + p + "cd", "pas" + p, strings.ToUpper(p),
			p[:1] + "_" + p[1:], "a-" + p[:len(p)-1] + "-" + p[len(p)-1:] + "_z"} {
			if !secretKey(key) {
				t.Errorf("secretKey(%q) = false", key)
			}
		}
		for i := range p {
			for _, key := range []string{p[:i] + p[i+1:], p[:i] + "q" + p[i+1:], "x" + p[:i] + "0" + p[i+1:]} {
				if got, want := secretKey(key), secretKeyUnicode(key); got != want {
					t.Errorf("secretKey(%q) = %v, the Unicode path %v", key, got, want)
				}
			}
		}
	}
}
