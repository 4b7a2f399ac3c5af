package jobstatus_test

import (
	"encoding/json"
	"testing"

	"github.com/tenantkit/tenantkit/jobstatus"
)

// TestStatuses: the JSON values are the API's strings, and exactly
// completed, failed and cancelled are terminal.
func TestStatuses(t *testing.T) {
	for s, want := range map[jobstatus.Status]struct {
		json     string
		terminal bool
	}{
		jobstatus.Pending:   {`"pending"`, false},
		jobstatus.Running:   {`"running"`, false},
		jobstatus.Completed: {`"completed"`, true},
		jobstatus.Failed:    {`"failed"`, true},
		jobstatus.Cancelled: {`"cancelled"`, true},
		"paused":            {`"paused"`, false},
		"":                  {`""`, false},
	} {
		b, err := json.Marshal(s)
		if err != nil || string(b) != want.json {
			t.Errorf("json.Marshal(%q) = %s, %v; want %s", s, b, err, want.json)
		}
		if s.Terminal() != want.terminal {
			t.Errorf("%q.Terminal() = %v, want %v", s, s.Terminal(), want.terminal)
		}
	}
}
