package attachments

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Defaults of Options' image limits.
const (
	// DefaultImageMemoryBytes is the memory the resizes of one process
	// may take together (Images.MemoryNeeded of each), and the most one
	// resize may take.
	DefaultImageMemoryBytes = 128 << 20
	// DefaultImageResizesPerTenant is how many resizes of one tenant may
	// run or wait at once in one process.
	DefaultImageResizesPerTenant = 2
	// DefaultImageWait is how long a resize waits for memory and a CPU
	// before it is refused with ErrBusy.
	DefaultImageWait = 10 * time.Second
)

// ErrBusy refuses a resize when the process has no room for it in time,
// or when its tenant already has Options.ImageResizesPerTenant resizes
// running or waiting. The image route answers 503 with Retry-After.
var ErrBusy = errors.New("attachments: too many images are being resized, retry shortly")

// resizeLimits bound what resizes take at once: memory (the sum of
// Images.MemoryNeeded estimates), CPUs, and each tenant's share.
type resizeLimits struct {
	memoryBytes int64
	memory      *semaphore.Weighted
	cpus        *semaphore.Weighted
	wait        time.Duration

	mu        sync.Mutex
	perTenant int
	tenants   map[string]int // resizes running or waiting, by tenant
}

func newResizeLimits(opts Options) *resizeLimits {
	cpus := opts.ImageResizes
	if cpus <= 0 {
		// Half the CPUs (at least one): the rest of the API keeps the
		// others however many images are asked for.
		cpus = max(1, runtime.GOMAXPROCS(0)/2)
	}
	return &resizeLimits{
		memoryBytes: opts.ImageMemoryBytes,
		memory:      semaphore.NewWeighted(opts.ImageMemoryBytes),
		cpus:        semaphore.NewWeighted(int64(cpus)),
		wait:        opts.ImageWait,
		perTenant:   opts.ImageResizesPerTenant,
		tenants:     map[string]int{},
	}
}

// admit counts a resize of tenantID, or refuses it with ErrBusy when the
// tenant has perTenant already. release undoes it.
func (l *resizeLimits) admit(tenantID string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tenants[tenantID] >= l.perTenant {
		return nil, ErrBusy
	}
	l.tenants[tenantID]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.tenants[tenantID]--; l.tenants[tenantID] <= 0 {
			delete(l.tenants, tenantID)
		}
	}, nil
}

// acquire waits, at most l.wait, for need bytes of the memory budget and
// a CPU; ErrBusy when they did not come. need must not pass memoryBytes.
func (l *resizeLimits) acquire(ctx context.Context, need int64) (*grant, error) {
	ctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	if err := l.memory.Acquire(ctx, need); err != nil {
		return nil, ErrBusy
	}
	if err := l.cpus.Acquire(ctx, 1); err != nil {
		l.memory.Release(need)
		return nil, ErrBusy
	}
	return &grant{l: l, bytes: need}, nil
}

// hold waits, at most l.wait, for n bytes of the memory budget, for a
// resized image held in memory while it is served; ErrBusy when they did
// not come. release gives them back.
func (l *resizeLimits) hold(ctx context.Context, n int64) (release func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	if err := l.memory.Acquire(ctx, n); err != nil {
		return nil, ErrBusy
	}
	return sync.OnceFunc(func() { l.memory.Release(n) }), nil
}

// grant is what acquire gave a resize: bytes of the memory budget and a
// CPU.
type grant struct {
	l     *resizeLimits
	bytes int64
}

// finish ends the resize: its CPU and its bytes go back, except kept
// (the resized image, served from memory), which stay charged until
// release.
func (g *grant) finish(kept int64) (release func()) {
	kept = min(kept, g.bytes)
	if g.bytes >= g.l.memoryBytes/collectAfter {
		// What the resize held is garbage now: collect it before the
		// next resize allocates as much again. Left to the pacer, the
		// heap grows to twice what was live at the last collection
		// (GOGC=100), so the garbage of one resize and the pixels of the
		// next would together pass the budget by far.
		runtime.GC()
	}
	g.l.cpus.Release(1)
	g.l.memory.Release(g.bytes - kept)
	return sync.OnceFunc(func() { g.l.memory.Release(kept) })
}

// collectAfter: a resize whose estimate is at least 1/collectAfter of the
// budget runs a garbage collection when it ends.
const collectAfter = 8
