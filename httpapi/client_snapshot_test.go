package httpapi

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestGeneratedClientIsCurrent: the Go client committed in examples/client
// was generated from the document the API serves today. It compares the
// served document (served as TestOpenAPIDocumentIsPortable serves it) with
// examples/client/openapi.json, the document client.go was generated
// from, byte for byte; examples/client's TestClientIsGenerated holds
// client.go to that file.
func TestGeneratedClientIsCurrent(t *testing.T) {
	t.Parallel()
	snapshot := filepath.Join("..", "examples", "client", "openapi.json")
	want, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatalf("reading the client's document: %v", err)
	}
	e := newTestEnv(t, storetest.SQLite(t))
	got := e.do("GET", "/api/docs/openapi", "", nil).expect(200).Body
	if bytes.Equal(got, want) {
		return
	}
	line, g, w := firstDifference(got, want)
	t.Errorf("the served OpenAPI document differs from %s, which examples/client's generated client was made from: "+
		"run go generate in examples/client (cd examples/client && go generate) and commit the result.\n"+
		"first difference, line %d:\n served: %s\n  file:  %s", snapshot, line, g, w)
}

// firstDifference returns the number of the first line that differs
// between a and b, and that line of each (cut to 200 bytes).
func firstDifference(a, b []byte) (int, string, string) {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; ; i++ {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) || i >= len(la) || i >= len(lb) {
			cut := func(s []byte) string {
				if len(s) > 200 {
					s = s[:200]
				}
				return string(s)
			}
			return i + 1, cut(x), cut(y)
		}
	}
}
