//go:build !tenantkit_nosqlite

package jobs

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	clientMakers = append(clientMakers, newSQLiteClient)
}

// newSQLiteClient runs River on the store's single writer connection: River
// does its own concurrent work, and SQLite allows one writer at a time.
// SQLite has no schemas, so River's tables sit beside ours. Its listener
// is woken at once by this process's inserts (wakingListener).
func newSQLiteClient(ctx context.Context, db *store.DB, cfg *river.Config, _ string) (client, bool, error) {
	pool, ok := db.SQLPool()
	if !ok {
		return nil, false, nil
	}
	cfg.Schema = ""
	d := &sqliteDriver{Driver: riversqlite.New(pool), local: make(chan *riverdriver.Notification, localWakeBuffer)}
	c, err := migrateAndConnect[*sql.Tx](ctx, db, d, cfg, nil, d.wake)
	return c, true, err
}

// localWakeBuffer bounds the insert notifications of this process waiting
// for the listener; past it they are dropped (the outbox's own
// notification of the same insert still comes, within 50ms).
const localWakeBuffer = 64

// sqliteDriver is River's SQLite driver whose listener also hears this
// process's committed inserts at once. River's SQLite listener reads the
// insert notifications from an outbox table every 50ms, so a job waited
// about that long for its queue to wake (the queues' polls, every
// 100ms then, were the quicker path: 23ms on average). Now a commit
// that inserted jobs hands the listener River's notification for each
// queue itself; other processes' inserts are still read from the outbox.
type sqliteDriver struct {
	*riversqlite.Driver
	local chan *riverdriver.Notification
}

// GetListener returns the outbox listener, woken by this process's
// inserts.
func (d *sqliteDriver) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	return &wakingListener{Listener: d.Driver.GetListener(params), local: d.local}
}

// wake hands the listener River's insert notification for each queue
// (the payload River's client writes to the outbox).
func (d *sqliteDriver) wake(queues []string) {
	for _, q := range queues {
		payload, _ := json.Marshal(struct {
			Queue string `json:"queue"`
		}{q})
		select {
		case d.local <- &riverdriver.Notification{Topic: riverInsertTopic, Payload: string(payload)}:
		default:
		}
	}
}

// wakingListener is a River listener that returns this process's insert
// notifications as soon as they come, and the outbox listener's as it
// reads them.
type wakingListener struct {
	riverdriver.Listener
	local <-chan *riverdriver.Notification
	// held is a notification the outbox listener returned while a local
	// one was being returned: the next wait returns it.
	held *riverdriver.Notification
}

// WaitForNotification returns the next notification, local or read from
// the outbox.
func (l *wakingListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	if n := l.held; n != nil {
		l.held = nil
		return n, nil
	}
	select {
	case n := <-l.local:
		return n, nil
	default:
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		n   *riverdriver.Notification
		err error
	}
	read := make(chan result, 1)
	go func() {
		n, err := l.Listener.WaitForNotification(wctx)
		read <- result{n, err}
	}()
	select {
	case r := <-read:
		return r.n, r.err
	case n := <-l.local:
		cancel()
		if r := <-read; r.err == nil {
			l.held = r.n // read just before the cancel
		}
		return n, nil
	}
}
