package notificationsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The notifications area is fed by the other areas' domain events: the
// Kit subscribes to them and turns each into notifications (areas never
// import each other). Every feed sets the notification's dedup key to
// the event id, so a redelivered event adds nothing.

// Notification types of the Kit's feeds.
const (
	// NotificationRule is a business rule's NOTIFY action.
	NotificationRule = "rules.notify"
	// NotificationWebhookDisabled is an outbound webhook disabled by its
	// deliveries.
	NotificationWebhookDisabled = "webhooks.webhook_disabled"
	// NotificationWebhookFailed is a webhook delivery that failed for
	// good.
	NotificationWebhookFailed = "webhooks.delivery_failed"
	// NotificationSyncFailed is a data sync run that failed, told to the
	// caller who started it.
	NotificationSyncFailed = "data_sync.run_failed"
)

// integrationCustomWebhooks is the integration whose notifyAdminsOnFailure
// setting turns the webhooks' feed on (integrationsapi.IntegrationWebhooks).
const integrationCustomWebhooks = "webhooks_custom"

// featureWebhooksManage is the feature whose holders hear of webhook
// failures.
const featureWebhooksManage = "webhooks.manage"

// feeds turns the other areas' events into notifications.
type feeds struct {
	logger       *slog.Logger
	notes        *notifications.Service
	integrations *integrations.Service
	dataSync     *datasync.Service
}

// subscribe registers the feeds of the areas the Kit has on its job
// engine (the webhooks' feed reads its setting from the integrations
// area).
func subscribe(k *tenantkit.Kit, notes *notifications.Service) error {
	f := &feeds{logger: k.Logger, notes: notes}
	f.integrations, _ = tenantkit.AreaOf[*integrations.Service](k)
	f.dataSync, _ = tenantkit.AreaOf[*datasync.Service](k)
	if _, ok := tenantkit.AreaOf[*rules.Service](k); ok {
		err := k.Jobs.Subscribe(jobs.Subscription{Name: "notifications.rules",
			Match:  func(t string) bool { return t == rules.EventNotificationCreated },
			Handle: f.notifyRule})
		if err != nil {
			return err
		}
	}
	if _, ok := tenantkit.AreaOf[*webhooks.Service](k); ok && f.integrations != nil {
		err := k.Jobs.Subscribe(jobs.Subscription{Name: "notifications.webhooks",
			Match:  func(t string) bool { return t == webhooks.EventWebhookDisabled || t == webhooks.EventDeliveryFailed },
			Handle: f.notifyWebhook})
		if err != nil {
			return err
		}
	}
	if f.dataSync != nil {
		return k.Jobs.Subscribe(jobs.Subscription{Name: "notifications.datasync",
			Match:  func(t string) bool { return t == datasync.EventRunFailed },
			Handle: f.notifySyncFailed})
	}
	return nil
}

// notifySyncFailed tells the caller who started a data sync run (a user,
// or an API key's inbox) that it failed, with the run's error. A run
// whose starter is unknown tells nobody.
func (f *feeds) notifySyncFailed(ctx context.Context, ev store.Event) error {
	var ref struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(ev.Data, &ref); err != nil || ev.TenantID == "" || ref.ID == "" {
		f.logger.Warn("notifications: unreadable sync run event", "event", ev.ID, "err", err)
		return nil
	}
	sctx := store.WithScope(ctx, store.Scope{TenantID: ev.TenantID})
	run, _, err := f.dataSync.GetRun(sctx, ref.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // deleted since
	case err != nil:
		return err
	case run.StartedBy == "":
		return nil
	}
	body := "The run stopped on an error."
	if run.LastError != nil {
		body = *run.LastError
	}
	_, err = f.notes.Create(sctx, notifications.CreateInput{Recipient: run.StartedBy, Type: NotificationSyncFailed,
		Title: notifications.Clip("Data sync failed: "+string(run.Direction)+" of "+run.EntityType+" ("+run.IntegrationID+")", notifications.MaxTitleLength),
		Body:  notifications.Clip(body, notifications.MaxBodyLength), Severity: notifications.SeverityError, DedupKey: "event:" + ev.ID})
	return f.feedError(ev, err)
}

// notifyWebhook tells the tenant's users holding webhooks.manage over the
// webhook's organization (the event's) that a webhook was disabled or that a delivery failed for good, when the
// tenant's custom webhooks integration has notifyAdminsOnFailure on.
// Failed deliveries are told at most once an hour per webhook (the dedup
// key names the webhook and the hour), so a failing endpoint does not
// flood the inboxes; a failed delivery of a notifications event is not
// told at all, so that a webhook subscribed to every event cannot feed
// itself.
func (f *feeds) notifyWebhook(ctx context.Context, ev store.Event) error {
	if ev.TenantID == "" {
		return nil
	}
	st, err := f.integrations.TenantState(ctx, ev.TenantID, integrationCustomWebhooks)
	if err != nil || !st.NotifyAdminsOnFailure {
		return err
	}
	in := notifications.CreateInput{Severity: notifications.SeverityError}
	switch ev.Type {
	case webhooks.EventWebhookDisabled:
		var w webhooks.Webhook
		if err := json.Unmarshal(ev.Data, &w); err != nil {
			f.logger.Warn("notifications: unreadable webhook event", "event", ev.ID, "err", err)
			return nil
		}
		in.Type, in.DedupKey = NotificationWebhookDisabled, "event:"+ev.ID
		in.Title = notifications.Clip("Webhook "+w.Name+" was disabled", notifications.MaxTitleLength)
		in.Body = fmt.Sprintf("Its endpoint answered 410 Gone or its deliveries failed too often (%d in a row), so it no longer receives events. Fix the endpoint, then enable it again.",
			w.ConsecutiveFailures)
	default:
		var d webhooks.DeliveryFailed
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			f.logger.Warn("notifications: unreadable webhook event", "event", ev.ID, "err", err)
			return nil
		}
		if strings.HasPrefix(d.EventType, "notifications.") {
			return nil
		}
		in.Type = NotificationWebhookFailed
		in.DedupKey = "webhook-failed:" + d.WebhookID + ":" + ev.OccurredAt.UTC().Format("2006-01-02T15")
		in.Title = notifications.Clip("Webhook "+d.WebhookName+": a delivery failed", notifications.MaxTitleLength)
		status := "no response"
		if d.ResponseStatus != nil {
			status = fmt.Sprintf("HTTP %d", *d.ResponseStatus)
		}
		in.Body = notifications.Clip(fmt.Sprintf("The %s event could not be delivered after %d attempts (%s). "+
			"Later failures of this webhook within the hour are not told again.", d.EventType, d.Attempts, status), notifications.MaxBodyLength)
	}
	sctx := store.WithScope(ctx, store.Scope{TenantID: ev.TenantID})
	_, err = f.notes.NotifyHolding(sctx, ev.OrganizationID, featureWebhooksManage, in)
	return f.feedError(ev, err)
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
func (f *feeds) notifyRule(ctx context.Context, ev store.Event) error {
	var d ruleNotification
	if err := json.Unmarshal(ev.Data, &d); err != nil || ev.TenantID == "" {
		f.logger.Warn("notifications: a rule notification without a tenant or readable data", "event", ev.ID, "err", err)
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
	_, err := f.notes.NotifyRefs(sctx, d.Recipients, in)
	return f.feedError(ev, err)
}

// feedError drops an error retrying cannot mend (the notification is
// invalid), after logging it; other errors retry the delivery.
func (f *feeds) feedError(ev store.Event, err error) error {
	if errors.Is(err, store.ErrInvalid) {
		f.logger.Warn("notifications: an event's notification was refused", "event", ev.ID, "type", ev.Type, "err", err)
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

func (r identityRecipients) Holding(ctx context.Context, tenantID, organizationID, feature string) ([]string, error) {
	return r.svc.UsersHolding(ctx, tenantID, organizationID, feature)
}
