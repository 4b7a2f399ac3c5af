package explorertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/explorer"
	"github.com/tenantkit/tenantkit/internal/testing/explorertest"
)

// TestBrowserExplorer renders the explorer in headless Chromium: the five
// operations of the sample document appear, and the page asks nothing of
// any host but the test server.
func TestBrowserExplorer(t *testing.T) {
	doc, err := os.ReadFile("testdata/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := newDocsServer(t, doc, false)
	explorertest.CheckPage(t, srv.URL+"/api/docs/api", 5, "List the tenant's feature toggles")
}

// TestBrowserCheckFails shows that the check fails a page that loads
// something from another host (here 127.0.0.2, where nothing listens), one
// without a Content-Security-Policy, and one that breaks its policy, so
// that a pass of TestBrowserExplorer means something.
func TestBrowserCheckFails(t *testing.T) {
	if explorertest.ChromiumPath() == "" {
		t.Skip("no Chromium (apt-get install chromium): the browser check is skipped")
	}
	const ops = `<div class="opblock">one</div><div class="opblock">two</div>`
	for _, tc := range []struct {
		name, csp, body string
		want            []string
	}{
		{"foreign image", "", ops + `<img src="http://127.0.0.2:9/pixel.png" alt="">`,
			[]string{"hosts other than", "127.0.0.2:9/pixel.png", "no Content-Security-Policy"}},
		{"inline script", explorer.ContentSecurityPolicy, ops + `<script>document.title = "inline"</script>`,
			[]string{"Content Security Policy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				if tc.csp != "" {
					w.Header().Set("Content-Security-Policy", tc.csp)
				}
				fmt.Fprint(w, `<!DOCTYPE html><title>bad</title><link rel="icon" href="data:,">`+tc.body)
			}))
			defer srv.Close()

			ft := &fakeTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				explorertest.CheckPage(ft, srv.URL+"/", 2, "")
			}()
			<-done
			got := ft.messages()
			if got == "" {
				t.Fatal("the check passed the page")
			}
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("the check's failures do not mention %q; they are:\n%s", want, got)
				}
			}
			t.Logf("the check failed the page, as it should:\n%s", got)
		})
	}
}

// fakeTB records the failures of the check instead of failing the test.
type fakeTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.Errorf("skipped: "+format, args...)
	runtime.Goexit()
}

func (f *fakeTB) messages() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.errs, "\n")
}
