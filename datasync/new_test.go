package datasync

import (
	"strings"
	"testing"
)

// New refuses, up front, options without the Integrations and Records a
// run needs, naming the missing one.
func TestNewRequiresIntegrationsAndRecords(t *testing.T) {
	for name, c := range map[string]struct {
		opts Options
		want string
	}{
		"no integrations": {Options{Records: recordsStub{}}, "Integrations"},
		"no records":      {Options{Integrations: integrationsStub{}}, "Records"},
	} {
		if _, err := New(nil, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New: %v, want an error naming %s", name, err, c.want)
		}
	}
}

type integrationsStub struct{ Integrations }

type recordsStub struct{ Records }
