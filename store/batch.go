package store

import (
	"context"
	"sync"
	"time"
)

// Batcher runs the small writes of concurrent callers in shared
// transactions (group commit): a caller's function joins a queue, and
// whoever finds no transaction running commits everything queued in one
// DB.Tx. Each caller returns once its own write is committed or failed.
// When a function fails, the shared transaction is rolled back and run
// again without it, and the failing function runs alone, so one caller's
// bad write never fails the others and its error is the one its own
// transaction gives.
//
// On SQLite, whose single writer makes every transaction wait its turn,
// this turns many commits into one, and one transaction runs at a time.
// PostgreSQL runs several shared transactions at once (up to 8), so that
// its round trips overlap. The functions must be what DB.Tx requires
// anyway: no effects outside the transaction (use Tx.AfterCommit), safe to
// run again.
//
// No goroutine outlives its work: a committing caller hands what queued
// up meanwhile to a goroutine, which stops when the queue is empty.
type Batcher struct {
	db      *DB
	runners int // how many transactions may run at once

	mu      sync.Mutex
	queue   []*batchItem
	running int
}

type batchItem struct {
	fn   func(ctx context.Context, tx *Tx) error
	done chan error
}

// Bounds of one shared transaction.
const (
	maxBatchItems = 128
	batchTimeout  = 30 * time.Second
)

// NewBatcher returns a batcher writing to db.
func NewBatcher(db *DB) *Batcher {
	runners := 1
	if db.Dialect().Name() == "postgres" {
		runners = 8
	}
	return &Batcher{db: db, runners: runners}
}

// Do runs fn in a transaction shared with other callers' and returns once
// it is committed (nil) or failed. The caller's context does not bound
// the shared transaction (it must not be torn down by one caller leaving);
// the transaction has its own 30-second limit.
func (b *Batcher) Do(fn func(ctx context.Context, tx *Tx) error) error {
	item := &batchItem{fn: fn, done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, item)
	if b.running == b.runners {
		b.mu.Unlock()
		return <-item.done
	}
	b.running++
	b.mu.Unlock()
	// The queue as it stands (this caller's function included, unless
	// another runner took it); what queued meanwhile is committed on
	// another goroutine, so that this caller returns now.
	if b.next() {
		go b.drain()
	}
	return <-item.done
}

// drain commits batches until the queue is empty, which ends this
// runner.
func (b *Batcher) drain() {
	for b.next() {
	}
}

// next commits the next batch of the queue. When the queue is empty it
// ends this runner and reports false.
func (b *Batcher) next() bool {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.running--
		b.mu.Unlock()
		return false
	}
	n := min(len(b.queue), maxBatchItems)
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	if len(b.queue) == 0 {
		b.queue = nil
	}
	b.mu.Unlock()
	b.commit(batch)
	return true
}

// commit runs a batch in one transaction. When a function fails, the
// shared transaction is rolled back, that function is run again alone
// (its own transaction gives its answer) and the others are committed
// together again without it; so a bad write costs one more transaction,
// not one per member. When the commit itself fails, each function runs
// alone.
func (b *Batcher) commit(batch []*batchItem) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var alone []*batchItem
	for len(batch) > 0 {
		failed := -1
		err := b.db.Tx(ctx, func(tx *Tx) error {
			for i, item := range batch {
				if err := item.fn(ctx, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if err == nil || len(batch) == 1 {
			for _, item := range batch {
				item.done <- err
			}
			break
		}
		if failed < 0 {
			alone = append(alone, batch...)
			break
		}
		alone = append(alone, batch[failed])
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
	for _, item := range alone {
		item.done <- b.db.Tx(ctx, func(tx *Tx) error { return item.fn(ctx, tx) })
	}
}
