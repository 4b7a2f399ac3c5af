package explorertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// AreaTimeout bounds the wait for one area's operations to render.
const AreaTimeout = 20 * time.Second

// shownOperations is a script that lists the operations the page shows
// ("GET /toggles"), sorted, without repeats (an operation with two tags
// renders twice).
const shownOperations = `(() => {
	const ops = new Set();
	for (const b of document.querySelectorAll(".opblock")) {
		const m = b.querySelector(".opblock-summary-method");
		const p = b.querySelector(".opblock-summary-path");
		if (m && p) ops.add(m.innerText.trim().toUpperCase() + " " + (p.getAttribute("data-path") || p.innerText.trim()));
	}
	return [...ops].sort();
})()`

// walkAreas picks each area of the page in turn (or takes the page as one
// area when it has no picker) and checks that it shows exactly the
// operations of its document, and that the areas show all of whole.
func walkAreas(ctx context.Context, t testing.TB, pageURL, documentURL string, whole []string, mustContain string) {
	t.Helper()
	type option struct {
		Value string `json:"value"`
		Name  string `json:"name"`
	}
	options, err := chromedp.Run(ctx, chromedp.Evaluate[[]option](
		`[...document.querySelectorAll("#explorer-area option")].map(o => ({value: o.value, name: o.textContent}))`))
	if err != nil {
		t.Errorf("explorertest: read the area picker: %v", err)
		return
	}
	if len(options) == 0 {
		options = []option{{Value: documentURL, Name: "the whole document"}}
	}
	base, _ := url.Parse(pageURL)
	shown := map[string]bool{}
	found := mustContain == ""
	for i, o := range options {
		ref, err := url.Parse(o.Value)
		if err != nil {
			t.Errorf("explorertest: area %q: URL %q: %v", o.Name, o.Value, err)
			continue
		}
		want, err := documentOperations(base.ResolveReference(ref).String())
		if err != nil {
			t.Errorf("explorertest: area %q: %v", o.Name, err)
			continue
		}
		if i > 0 {
			script := fmt.Sprintf(`(() => { const s = document.getElementById("explorer-area"); s.selectedIndex = %d; s.dispatchEvent(new Event("change")); })()`, i)
			if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](script)); err != nil {
				t.Errorf("explorertest: pick area %q: %v", o.Name, err)
				continue
			}
		}
		wantJSON, _ := json.Marshal(want)
		actx, cancel := context.WithTimeout(ctx, AreaTimeout)
		_, err = chromedp.Run(actx, chromedp.Poll[bool](
			fmt.Sprintf(`JSON.stringify(%s) === %q || null`, shownOperations, wantJSON),
			chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](shownOperations))
		if err != nil {
			t.Errorf("explorertest: area %q (%s) shows %d operations, not the %d of its document, after %s: missing %v, extra %v",
				o.Name, o.Value, len(got), len(want), AreaTimeout, minus(want, got), minus(got, want))
		}
		for _, op := range got {
			shown[op] = true
		}
		if !found {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			found = strings.Contains(text, mustContain)
		}
	}
	var missing []string
	for _, op := range whole {
		if !shown[op] {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		t.Errorf("explorertest: the explorer shows %d of the %d operations of %s; not shown: %v",
			len(whole)-len(missing), len(whole), documentURL, missing)
	}
	if !found {
		t.Errorf("explorertest: no area of the page contains %q", mustContain)
	}
	t.Logf("explorertest: %d areas show the %d operations of %s", len(options), len(whole)-len(missing), documentURL)
}

// documentOperations fetches the OpenAPI document at rawURL and lists its
// operations as the page shows them ("GET /toggles"), sorted.
func documentOperations(rawURL string) ([]string, error) {
	resp, err := http.Get(rawURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d", rawURL, resp.StatusCode)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("GET %s: %w", rawURL, err)
	}
	var ops []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				ops = append(ops, strings.ToUpper(method)+" "+path)
			}
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("GET %s: the document has no operations", rawURL)
	}
	slices.Sort(ops)
	return ops, nil
}

// minus lists the elements of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
