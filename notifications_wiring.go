package tenantkit

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
)

// The notifications area is fed by the other areas' domain events: the
// Kit subscribes to them and turns each into notifications (areas never
// import each other). Every feed sets the notification's dedup key to
// the event id, so a redelivered event adds nothing.

// Notification types of the Kit's feeds.
const (
	// NotificationRule is a business rule's NOTIFY action.
	NotificationRule = "rules.notify"
)

// subscribeNotifications registers the feeds on the job engine.
func (k *Kit) subscribeNotifications() error {
	return k.Jobs.Subscribe(jobs.Subscription{Name: "notifications.rules",
		Match:  func(t string) bool { return t == rules.EventNotificationCreated },
		Handle: k.notifyRule})
}

// ruleNotification is the data of rules.EventNotificationCreated that the
// feed reads.
type ruleNotification struct {
	RuleID     string   `json:"ruleId"`
	RuleName   string   `json:"ruleName"`
	Recipients []string `json:"recipients"`
	Subject    string   `json:"subject"`
	Message    string   `json:"message"`
}

// notifyRule delivers a NOTIFY action to the users its recipients name
// (user ids, emails, role names; others are skipped). The subject is the
// title ("Rule <name>" when empty), the message the body.
func (k *Kit) notifyRule(ctx context.Context, ev store.Event) error {
	var d ruleNotification
	if err := json.Unmarshal(ev.Data, &d); err != nil || ev.TenantID == "" {
		k.Logger.Warn("notifications: a rule notification without a tenant or readable data", "event", ev.ID, "err", err)
		return nil // retrying cannot help
	}
	title := d.Subject
	if title == "" {
		title = "Rule " + d.RuleName
	}
	in := notifications.CreateInput{Type: NotificationRule, Title: notifications.Clip(title, notifications.MaxTitleLength),
		Body: notifications.Clip(d.Message, notifications.MaxBodyLength), Severity: notifications.SeverityInfo,
		DedupKey: "event:" + ev.ID}
	sctx := store.WithScope(ctx, store.Scope{TenantID: ev.TenantID})
	_, err := k.Notifications.NotifyRefs(sctx, d.Recipients, in)
	return k.feedError(ev, err)
}

// feedError drops an error retrying cannot mend (the notification is
// invalid), after logging it; other errors retry the delivery.
func (k *Kit) feedError(ev store.Event, err error) error {
	if errors.Is(err, store.ErrInvalid) {
		k.Logger.Warn("notifications: an event's notification was refused", "event", ev.ID, "type", ev.Type, "err", err)
		return nil
	}
	return err
}

// identityRecipients resolves the feeds' recipients over the identity
// service (notifications.Recipients).
type identityRecipients struct{ svc *identity.Service }

func (r identityRecipients) Resolve(ctx context.Context, tenantID string, refs []string) ([]string, error) {
	return r.svc.RecipientUsers(ctx, tenantID, refs)
}

func (r identityRecipients) Holding(ctx context.Context, tenantID, feature string) ([]string, error) {
	return r.svc.UsersHolding(ctx, tenantID, feature)
}
