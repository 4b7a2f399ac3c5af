// Package jsongen makes random values of the kinds encoding/json decodes
// into (nil, bool, float64, string, []any, map[string]any), for tests
// that compare a writer of JSON with encoding/json on generated input.
package jsongen

import (
	"math"
	"math/rand/v2"
	"strings"
)

// Gen makes values from R, with keys and strings of one to three of
// Parts joined.
type Gen struct {
	R     *rand.Rand
	Parts []string
}

// Key returns a key (or string) of one to three parts.
func (g Gen) Key() string {
	var b strings.Builder
	for range g.R.IntN(3) + 1 {
		b.WriteString(g.Parts[g.R.IntN(len(g.Parts))])
	}
	return b.String()
}

// Value returns a value at nesting depth (0 at the top): nil, a boolean,
// a finite float64 (any bits, or a quarter), a string, or below depth 3
// a list or an object of up to three members.
func (g Gen) Value(depth int) any {
	switch n := g.R.IntN(8); {
	case n == 0:
		return nil
	case n == 1:
		return g.R.IntN(2) == 0
	case n == 2:
		return math.Float64frombits(g.R.Uint64()&^(0x7ff<<52) | uint64(g.R.IntN(0x7ff))<<52) // finite
	case n == 3:
		return float64(g.R.IntN(2000)-1000) / 4
	case n == 4 && depth < 3:
		l := make([]any, g.R.IntN(4))
		for i := range l {
			l[i] = g.Value(depth + 1)
		}
		return l
	case n == 5 && depth < 3:
		m := map[string]any{}
		for range g.R.IntN(4) {
			m[g.Key()] = g.Value(depth + 1)
		}
		return m
	}
	return g.Key()
}
