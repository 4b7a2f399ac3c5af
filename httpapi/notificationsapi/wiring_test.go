package notificationsapi

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// fixedRecipients resolves every reference to the same users.
type fixedRecipients []string

func (r fixedRecipients) Resolve(context.Context, string, []string) ([]string, error) { return r, nil }

func (r fixedRecipients) Holding(context.Context, string, string, string) ([]string, error) {
	return r, nil
}

// Event delivery is at least once: the rules feed handling the same
// event twice adds nothing the second time; another event adds again.
func TestNotificationFeedRedelivery(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		kit, err := tenantkit.Open(ctx, tenantkit.Config{DB: db,
			Areas: []tenantkit.Module{Area(notifications.Options{Recipients: fixedRecipients{"u-1", "u-2"}})}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kit.Close(context.Background()) })
		notes, _ := tenantkit.AreaOf[*notifications.Service](kit)
		f := &feeds{logger: kit.Logger, notes: notes}
		tenantID := "t-" + store.NewID()
		data, _ := json.Marshal(map[string]any{"ruleId": "R-1", "ruleName": "Heavy", "recipients": []string{"ops"},
			"subject": "", "message": "Heavy: 12 kg"})
		ev := store.Event{ID: store.NewID(), Type: rules.EventNotificationCreated, TenantID: tenantID, Data: data}
		for range 2 {
			if err := f.notifyRule(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		inbox := func(user string) []*notifications.Notification {
			t.Helper()
			p, err := notes.List(store.WithScope(ctx, store.Scope{TenantID: tenantID, ActorID: user}), notifications.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return p.Items
		}
		for _, u := range []string{"u-1", "u-2"} {
			items := inbox(u)
			if len(items) != 1 {
				t.Fatalf("%s holds %d notifications after a redelivered event, want 1", u, len(items))
			}
			if n := items[0]; n.Title != "Rule Heavy" || n.Body != "Heavy: 12 kg" || n.Type != NotificationRule {
				t.Errorf("%s's notification: %+v", u, n)
			}
		}
		ev.ID = store.NewID()
		if err := f.notifyRule(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if n := len(inbox("u-1")); n != 2 {
			t.Errorf("u-1 holds %d notifications after a second event, want 2", n)
		}
	})
}
