// Package explorertest checks an API explorer page (package explorer) in a
// real browser: headless Chromium, driven with chromedp, renders the page,
// and the check fails on anything the page asks of a host other than its
// own, on a failed or refused request, on a script error or a
// Content-Security-Policy violation, and when the operations do not render:
// CheckEveryOperation picks each area of a page that shows the API one
// area at a time and checks that every operation of the whole document is
// shown.
//
// It needs Debian's chromium (apt-get install chromium), found on PATH as
// chromium or chromium-browser, or at the path in $TENANTKIT_CHROMIUM;
// without it CheckPage skips the test with t.Skip, saying so.
//
// The browser starts with a fresh profile in a temporary directory and with
// Chromium's own traffic turned off (background networking, component
// updates, sync, default apps, QUIC), so that every request it makes comes
// from the page.
//
// This directory is a Go module of its own (its go.mod replaces
// github.com/tenantkit/tenantkit with the repository root), so that
// chromedp is a requirement of these tests only and a host that requires
// tenantkit never downloads it. Its tests render the explorer against a
// sample document (browser_test.go, which also shows that the check fails
// a page that breaks its rules), a sample of 240 operations in 8 areas
// (large_test.go, which also shows that the same document whole does not
// render) and the API's own explorer through httpapi (api_test.go). Run them here with go test ./...; go test ./... from the
// repository root does not enter this module, .ci/run runs it explicitly.
// After a change to the root go.mod, run go mod tidy here too.
package explorertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Timeout bounds one CheckPage: starting the browser, loading and
// rendering the page, and closing the browser.
const Timeout = 60 * time.Second

// ChromiumPath returns the Chromium to run: $TENANTKIT_CHROMIUM when set,
// else chromium or chromium-browser on PATH; "" when there is none.
func ChromiumPath() string {
	if p := os.Getenv("TENANTKIT_CHROMIUM"); p != "" {
		if full, err := exec.LookPath(p); err == nil {
			return full
		}
		return ""
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if full, err := exec.LookPath(name); err == nil {
			return full
		}
	}
	return ""
}

// CheckPage loads pageURL (an explorer page served by a local test server,
// such as httptest.NewServer) in headless Chromium and waits until Swagger
// UI has rendered at least minOperations operations (.opblock elements).
// It then fails the test when:
//   - the page or anything it loads made a request to a host other than
//     pageURL's (the host and port must match: data:, blob: and about:
//     URLs are fine);
//   - a request failed or answered 400 or more;
//   - the page's response has no Content-Security-Policy;
//   - a script threw, or the console or the browser's log reported an
//     error (a Content-Security-Policy violation is one);
//   - Swagger UI reported an error (the document did not load or parse);
//   - mustContain, when not "", is not in the rendered text (an operation's
//     summary, say).
//
// It skips the test when there is no Chromium (see ChromiumPath), and
// fails it when the page does not render within Timeout. Set
// $EXPLORERTEST_SCREENSHOT to a file name to get a PNG of the page.
func CheckPage(t testing.TB, pageURL string, minOperations int, mustContain string) {
	t.Helper()
	checkPage(t, pageURL, minOperations, mustContain, nil)
}

// CheckEveryOperation makes CheckPage's checks and then checks that every
// operation of the OpenAPI document at documentURL (the whole document the
// page shows, such as /api/docs/openapi) is shown: on a page with an area
// picker (#explorer-area, see explorer.Page) it picks each area in turn
// and waits until the page shows exactly the operations of that area's
// document (the option's URL), then checks that the areas together hold
// every operation of the whole document; on a page without one, it waits
// until the page shows every operation. An operation is shown when an
// .opblock renders its method and path. mustContain must be in the text
// of some area.
func CheckEveryOperation(t testing.TB, pageURL, documentURL, mustContain string) {
	t.Helper()
	whole, err := documentOperations(documentURL)
	if err != nil {
		t.Fatalf("explorertest: %v", err)
	}
	checkPage(t, pageURL, 1, "", func(ctx context.Context) {
		t.Helper()
		walkAreas(ctx, t, pageURL, documentURL, whole, mustContain)
	})
}

// checkPage is CheckPage; walk, when not nil, runs once the page has
// rendered and its first operation and schemas are open, before the
// requests are checked.
func checkPage(t testing.TB, pageURL string, minOperations int, mustContain string, walk func(context.Context)) {
	t.Helper()
	chromium := ChromiumPath()
	if chromium == "" {
		t.Skipf("explorertest: no Chromium (chromium or chromium-browser on PATH, or $TENANTKIT_CHROMIUM): "+
			"the browser check of %s is skipped; install it with apt-get install chromium", pageURL)
	}
	page, err := url.Parse(pageURL)
	if err != nil || page.Host == "" {
		t.Fatalf("explorertest: page URL %q is not an absolute URL", pageURL)
	}
	start := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.WindowSize(1280, 1024),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()

	rec := &recorder{}
	bctx, cancelBrowser := chromedp.NewContext(actx,
		chromedp.WithListener(rec.event),
		chromedp.WithLogf(func(string, ...any) {}),
		chromedp.WithErrorf(func(string, ...any) {}))
	defer cancelBrowser()

	resp, err := chromedp.Run(bctx, chromedp.NavigateResponse(pageURL))
	if err != nil {
		t.Fatalf("explorertest: load %s: %v", pageURL, err)
	}
	if resp.Status != 200 {
		t.Errorf("explorertest: %s answered %d, want 200", pageURL, resp.Status)
	}
	if !hasHeader(resp.Headers, "Content-Security-Policy") {
		t.Errorf("explorertest: %s has no Content-Security-Policy header", pageURL)
	}

	// Wait until the operations render, or Swagger UI shows an error.
	type state struct {
		Operations int    `json:"operations"`
		Error      string `json:"error"`
	}
	expr := fmt.Sprintf(`(() => {
		const ops = document.querySelectorAll(".opblock").length;
		if (ops >= %d) return {operations: ops, error: ""};
		const err = document.querySelector(".errors-wrapper, .loading-container .errors, .swagger-ui .info .error-wrapper");
		if (err && err.innerText.trim()) return {operations: ops, error: err.innerText.trim()};
		return null;
	})()`, minOperations)
	// Leave time within Timeout to say what the page shows instead.
	rctx, cancelRender := context.WithTimeout(bctx, Timeout*2/3)
	st, err := chromedp.Run(rctx, chromedp.Poll[state](expr, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(0)))
	cancelRender()
	if err != nil {
		text, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		rec.report(t, page.Host)
		t.Fatalf("explorertest: %s did not render %d operations after %s: %v; the page says: %.500q",
			pageURL, minOperations, time.Since(start).Round(time.Millisecond), err, text)
	}
	if st.Error != "" {
		t.Errorf("explorertest: Swagger UI reports an error: %.500q", st.Error)
	}
	rendered := time.Since(start)

	// Open the first operation and the schemas, with the mouse: Swagger UI
	// renders their parameters, responses and models only then.
	if err := clickAndWait(bctx, ".opblock .opblock-summary-control", ".opblock.is-open .opblock-body"); err != nil {
		t.Errorf("explorertest: open the first operation: %v", err)
	}
	if n, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("section.models .models-control").length`)); n > 0 {
		if err := clickAndWait(bctx, "section.models .models-control",
			"section.models.is-open :is(.json-schema-2020-12, .model-container)"); err != nil {
			t.Errorf("explorertest: open the schemas: %v", err)
		}
		// Expand the first schema all the way down (OpenAPI 3.1's JSON
		// Schema 2020-12 view has the button).
		_ = chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](
			`document.querySelector("section.models .json-schema-2020-12-expand-deep-button")?.click()`))
	}

	// Let what the rendering started settle: no request in flight, and
	// none started for a moment.
	rec.waitQuiet(bctx, 300*time.Millisecond, 5*time.Second)

	if walk != nil {
		walk(bctx)
		rec.waitQuiet(bctx, 300*time.Millisecond, 5*time.Second)
	}
	if mustContain != "" {
		text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
		if err != nil {
			t.Errorf("explorertest: read the page's text: %v", err)
		} else if !strings.Contains(text, mustContain) {
			t.Errorf("explorertest: the rendered page does not contain %q; it says: %.1000q", mustContain, text)
		}
	}
	if name := os.Getenv("EXPLORERTEST_SCREENSHOT"); name != "" {
		if png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err != nil {
			t.Logf("explorertest: screenshot: %v", err)
		} else if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Logf("explorertest: screenshot: %v", err)
		}
	}
	requests := rec.report(t, page.Host)

	// Close the browser before t.TempDir's cleanup removes its profile.
	cancelBrowser()
	cancelAlloc()
	t.Logf("explorertest: %s rendered %d operations in %s; %s in all; %d requests:\n\t%s",
		pageURL, st.Operations, rendered.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		len(requests), strings.Join(requests, "\n\t"))
}

// clickAndWait clicks the first element that matches the CSS selector
// click, with the mouse, and waits until one matches until; it gives up
// after 10 s, and at once when nothing matches click.
func clickAndWait(ctx context.Context, click, until string) error {
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, click)))
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("nothing matches %s", click)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A deep link scrolls the page to its operation: a click aimed while
	// the page still moves lands elsewhere. Wait for the scroll to rest,
	// and click again if the first click changed nothing.
	waitScrollRest(ctx)
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		pollCtx, cancelPoll := context.WithTimeout(ctx, 3*time.Second)
		last = chromedp.Do(pollCtx,
			chromedp.Click(chromedp.CSS(click)),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%q) !== null`, until),
				chromedp.WithPollingInterval(50*time.Millisecond)))
		cancelPoll()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		waitScrollRest(ctx)
	}
	return fmt.Errorf("clicked %s, then waited for %s: %w", click, until, last)
}

// waitScrollRest waits, at most 2 s, until the page's scroll position has
// not changed for 200 ms.
func waitScrollRest(ctx context.Context) {
	deadline := time.Now().Add(2 * time.Second)
	prev, still := -1.0, time.Now()
	for time.Now().Before(deadline) {
		y, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.scrollY`))
		if err != nil {
			return
		}
		if y != prev {
			prev, still = y, time.Now()
		} else if time.Since(still) >= 200*time.Millisecond {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hasHeader(h network.Headers, name string) bool {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return strings.TrimSpace(s) != ""
		}
	}
	return false
}

// recorder keeps what the listener sees. The listener runs on chromedp's
// reading goroutine, so it only appends under the lock.
type recorder struct {
	mu        sync.Mutex
	requests  []request
	inflight  map[network.RequestID]bool
	last      time.Time
	failures  []string
	responses []string
	console   []string
}

type request struct {
	url, method, kind string
}

func (r *recorder) event(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if r.inflight == nil {
			r.inflight = map[network.RequestID]bool{}
		}
		r.inflight[ev.RequestID] = true
		r.last = time.Now()
		r.requests = append(r.requests, request{url: ev.Request.URL, method: ev.Request.Method, kind: string(ev.Type)})
	case *network.EventLoadingFinished:
		delete(r.inflight, ev.RequestID)
		r.last = time.Now()
	case *network.EventLoadingFailed:
		delete(r.inflight, ev.RequestID)
		r.last = time.Now()
		msg := ev.ErrorText
		if ev.BlockedReason != "" {
			msg += " (blocked: " + string(ev.BlockedReason) + ")"
		}
		r.failures = append(r.failures, fmt.Sprintf("%s request %s failed: %s", ev.Type, ev.RequestID, msg))
	case *network.EventResponseReceived:
		if ev.Response.Status >= 400 {
			r.responses = append(r.responses, fmt.Sprintf("%s answered %d", ev.Response.URL, ev.Response.Status))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		r.console = append(r.console, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				switch {
				case a.Description != "":
					parts = append(parts, a.Description)
				case len(a.Value) > 0:
					parts = append(parts, string(a.Value))
				}
			}
			r.console = append(r.console, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " ")))
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			r.console = append(r.console, fmt.Sprintf("browser log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

// waitQuiet waits until no request is in flight and none started for
// quiet, at most max.
func (r *recorder) waitQuiet(ctx context.Context, quiet, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		r.mu.Lock()
		idle := len(r.inflight) == 0 && time.Since(r.last) >= quiet
		r.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// report fails t for each request to another host than host, each failed
// request or error status, and each script error; it returns the requests
// ("GET URL").
func (r *recorder) report(t testing.TB, host string) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var foreign []string
	for _, q := range r.requests {
		if !local(q.url, host) {
			foreign = append(foreign, fmt.Sprintf("%s %s (%s)", q.method, q.url, q.kind))
		}
	}
	if len(foreign) > 0 {
		t.Errorf("explorertest: the page asked hosts other than %s (%d requests):\n\t%s",
			host, len(foreign), strings.Join(foreign, "\n\t"))
	}
	for _, msg := range slices.Concat(r.failures, r.responses) {
		t.Errorf("explorertest: %s", msg)
	}
	for _, msg := range r.console {
		t.Errorf("explorertest: %s", msg)
	}
	all := make([]string, len(r.requests))
	for i, q := range r.requests {
		u := q.url
		if len(u) > 100 {
			u = u[:100] + "…"
		}
		all[i] = q.method + " " + u
	}
	return all
}

// local reports whether a request to rawURL stays on host: an http(s) or
// ws(s) URL with the same host and port, or a data:, blob: or about: URL.
func local(rawURL, host string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	case "http", "https", "ws", "wss":
		return u.Host == host
	}
	return false
}
