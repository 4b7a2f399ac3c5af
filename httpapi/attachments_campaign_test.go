package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/attachments/thumbs/thumbstest"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The thumbnail campaign: 32 concurrent anonymous requests, each of a
// size not asked before, of the costliest public files that pass the
// 50 MP guard, over real HTTP, while a cheap route is polled:
//
//   - 8 of the file (7000×7000 16-bit RGBA, 381 KB, 392 MB
//     decoded);
//   - 12 of a 16-bit RGBA PNG just small enough for its resize to fit the
//     budget (the largest such square, found with thumbs.MemoryNeeded);
//   - 12 of the largest contain sizes of a small PNG whose resize fits
//     the budget (the canvas and its encoding are the cost).
//
// The per-tenant limit is lifted (every file is one tenant's) so that the
// process budget alone is what holds the memory. With
// TENANTKIT_IMAGE_CAMPAIGN_BASELINE=1 the same campaign also runs with
// the budget lifted and one resize per CPU, as the image route was
// before it had a budget: it takes gigabytes.
func TestAttachmentImageCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("resizes some 400 MB of pixels")
	}
	// Not parallel, on SQLite only: the measure is this process's heap,
	// which the store does not change; the route's limits are tested on
	// both engines by TestAttachmentImageLimits.
	bounded := attCampaign(t, attachments.Options{ImageResizesPerTenant: 64})
	t.Logf("bounded:  %s", bounded)
	if bounded.heapGrowth > 256<<20 || bounded.rssGrowth > 256<<20 {
		t.Errorf("the heap grew %d MB and the RSS %d MB during the campaign, want at most 256 MB each", bounded.heapGrowth>>20, bounded.rssGrowth>>20)
	}
	if bounded.statuses[200] == 0 || bounded.statuses[400] != 8 {
		t.Errorf("statuses %v: want some resizes made, and the 8 of the 49 MP 16-bit file refused", bounded.statuses)
	}
	if os.Getenv("TENANTKIT_IMAGE_CAMPAIGN_BASELINE") == "1" {
		baseline := attCampaign(t, attachments.Options{ImageMemoryBytes: 1 << 40, ImageResizes: runtime.GOMAXPROCS(0),
			ImageResizesPerTenant: 64, ImageWait: 10 * time.Minute})
		t.Logf("baseline: %s", baseline)
	}
}

// campaignResult is what attCampaign measured.
type campaignResult struct {
	heapGrowth, rssGrowth int64 // peaks above the start
	statuses              map[int]int
	took                  time.Duration
	idle, loaded          []time.Duration // the cheap route's latencies before and during
}

func (r campaignResult) String() string {
	q := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(float64(len(d))*p))]
	}
	return fmt.Sprintf("heap +%d MB, RSS +%d MB, statuses %v, %.1f s; file route p50/p99/max %v/%v/%v idle, %v/%v/%v during (%d requests)",
		r.heapGrowth>>20, r.rssGrowth>>20, r.statuses, r.took.Seconds(),
		q(r.idle, .5), q(r.idle, .99), q(r.idle, 1), q(r.loaded, .5), q(r.loaded, .99), q(r.loaded, 1), len(r.loaded))
}

// attCampaign runs the campaign against a Kit with opts.
func attCampaign(t *testing.T, opts attachments.Options) campaignResult {
	e := attNewEnv(t, storetest.SQLite(t), opts)
	srv := httptest.NewServer(e.handler)
	defer srv.Close()
	f := attSetup(e, "Acme")
	budget := opts.ImageMemoryBytes
	if budget == 0 || budget > attachments.DefaultImageMemoryBytes {
		budget = attachments.DefaultImageMemoryBytes
	}
	// The largest 16-bit square whose 320×320 fits the budget, and the
	// largest contain size of a small image that does.
	fits := func(src []byte, w, h int, fit thumbs.Fit) bool {
		_, need, err := thumbs.MemoryNeeded(bytes.NewReader(src), w, h, fit)
		return err == nil && need <= budget
	}
	side := 1000
	for fits(thumbstest.PNGHeader(side+100, side+100, 16, 6), 320, 320, thumbs.Cover) {
		side += 100
	}
	small := attPNG(t, 300, 200)
	box := 1000
	for box+100 <= thumbs.MaxSize && fits(small, box+100, box+100, thumbs.Contain) {
		box += 100
	}
	upload := func(name string, data []byte) string {
		return srv.URL + attBase + "/image/" + f.upload("r", name, data, "partitionCode", "productsMedia")["id"].(string) + "/" + name
	}
	big, near, smallPath := upload("big16.png", attFlat16()), upload("near16.png", thumbstest.FlatPNG(side, side, 16, 6)), upload("small.png", small)
	cheap := srv.URL + attBase + "/file/" + f.upload("r", "cheap.txt", []byte("cheap"), "partitionCode", "productsMedia")["id"].(string)
	var paths []string
	for i := range 8 {
		paths = append(paths, fmt.Sprintf("%s?width=%d&height=%d", big, 300+i, 300+i))
	}
	for i := range 12 {
		paths = append(paths, fmt.Sprintf("%s?width=%d&height=%d", near, 320+i, 320+i))
	}
	for i := range 12 {
		paths = append(paths, fmt.Sprintf("%s?width=%d&height=%d&cropType=contain", smallPath, box-i, box-i))
	}

	client := srv.Client()
	get := func(url string) (int, error) {
		resp, err := client.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	timed := func(n int) []time.Duration {
		var out []time.Duration
		for range n {
			start := time.Now()
			if status, err := get(cheap); err != nil || status != 200 {
				t.Errorf("the file route: %d %v", status, err)
			}
			out = append(out, time.Since(start))
			time.Sleep(20 * time.Millisecond)
		}
		return out
	}
	var res campaignResult
	res.idle = timed(20)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, rss0 := int64(ms.HeapInuse), attRSS()
	var heapTop, rssTop atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if h := int64(ms.HeapInuse); h > heapTop.Load() {
				heapTop.Store(h)
			}
			if r := attRSS(); r > rssTop.Load() {
				rssTop.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var loaded []time.Duration
	pollDone := make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	res.statuses = map[int]int{}
	for _, p := range paths {
		wg.Go(func() {
			status, err := get(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
			}
			mu.Lock()
			res.statuses[status]++
			mu.Unlock()
		})
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	go func() {
		defer close(pollDone)
		for {
			select {
			case <-allDone:
				return
			default:
				loaded = append(loaded, timed(1)...)
			}
		}
	}()
	<-allDone
	res.took = time.Since(start)
	<-pollDone
	close(stop)
	<-sampled
	res.loaded = loaded
	res.heapGrowth, res.rssGrowth = heapTop.Load()-heap0, rssTop.Load()-rss0
	slices.Sort(res.idle)
	slices.Sort(res.loaded)
	t.Logf("files: %d×%d 16-bit near the budget, %d×%d contain of a 300×200 PNG; budget %d MB", side, side, box, box, budget>>20)
	return res
}

// attRSS is this process's resident set, in bytes (0 where /proc is
// missing).
func attRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
