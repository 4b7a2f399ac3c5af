//go:build !tenantkit_nosqlite

package jobs

import (
	"context"
	"testing"

	"github.com/riverqueue/river/riverdriver"
)

// outboxStub is an outbox listener whose wait returns its notification
// only once the wait is cancelled: one read just before the cancel.
type outboxStub struct {
	riverdriver.Listener
	waiting chan struct{}
	n       *riverdriver.Notification
}

func (o *outboxStub) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	o.waiting <- struct{}{}
	<-ctx.Done()
	return o.n, nil
}

// A local notification is returned while the outbox listener waits, and
// a notification the outbox listener read as it was interrupted is
// returned by the next wait, not lost.
func TestWakingListener(t *testing.T) {
	t.Parallel()
	read := &riverdriver.Notification{Topic: riverInsertTopic, Payload: `{"queue":"other"}`}
	outbox := &outboxStub{waiting: make(chan struct{}, 1), n: read}
	d := &sqliteDriver{local: make(chan *riverdriver.Notification, localWakeBuffer)}
	l := &wakingListener{Listener: outbox, local: d.local}

	got := make(chan *riverdriver.Notification, 1)
	go func() {
		n, err := l.WaitForNotification(t.Context())
		if err != nil {
			t.Error(err)
		}
		got <- n
	}()
	<-outbox.waiting
	d.wake([]string{"events"})
	if n := <-got; n.Topic != riverInsertTopic || n.Payload != `{"queue":"events"}` {
		t.Fatalf("first wait returned %+v, want the local insert notification of events", n)
	}
	n, err := l.WaitForNotification(t.Context())
	if err != nil || n != read {
		t.Fatalf("second wait returned %+v, %v; want the outbox's notification read during the first", n, err)
	}
}
