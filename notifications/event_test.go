package notifications_test

import (
	"encoding/json"
	"testing"

	"github.com/tenantkit/tenantkit/notifications"
)

// A new notification is broadcast on the events stream to its recipient
// only: its event type names, as the recipient field, the field of the
// event's data that holds the recipient.
func TestNotificationEventReachesItsRecipientOnly(t *testing.T) {
	t.Parallel()
	if len(notifications.EventTypes) != 1 || notifications.EventTypes[0].ID != notifications.EventNotificationCreated {
		t.Fatalf("event types %+v, want notifications.notification.created", notifications.EventTypes)
	}
	et := notifications.EventTypes[0]
	if !et.ClientBroadcast || et.RecipientField == "" {
		t.Fatalf("%s: ClientBroadcast %v, RecipientField %q: want broadcast to its recipient only", et.ID, et.ClientBroadcast, et.RecipientField)
	}
	data, err := json.Marshal(notifications.NotificationEvent{ID: "n1", Recipient: "user-1", Type: "t", Severity: notifications.SeverityInfo})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if fields[et.RecipientField] != "user-1" {
		t.Errorf("the event's data %s holds no recipient at %q", data, et.RecipientField)
	}
}
