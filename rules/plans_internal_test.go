package rules

import (
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// A deleted rule's compilation is dropped (the soak showed the map kept
// every rule ever executed), and the map never outgrows maxCompiled.
func TestCompiledRulesAreForgotten(t *testing.T) {
	p := newPlans(storetest.SQLite(t), nil, time.Second)
	r := &Rule{ID: "r1", UpdatedAt: time.Unix(1, 0)}
	if c := p.compiledFor(r); c != p.compiledFor(r) {
		t.Fatal("the compilation is not reused")
	}
	p.forget("r1")
	if _, ok := p.compiled["r1"]; ok {
		t.Fatal("forget kept the rule")
	}
	for i := range maxCompiled + 10 {
		p.compiledFor(&Rule{ID: string(rune('a'+i%26)) + time.Duration(i).String()})
	}
	if n := len(p.compiled); n > maxCompiled {
		t.Fatalf("%d compiled rules kept, more than %d", n, maxCompiled)
	}
}
