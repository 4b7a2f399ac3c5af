package dashboardsapi

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Built-in dashboard widgets: each shows one of the Kit's areas, with data
// read from its store in the caller's scope.
const (
	WidgetWebhookHealth  = "webhooks.delivery_health"
	WidgetRuleExecutions = "business_rules.executions"
	WidgetStorageUse     = "attachments.storage"
	WidgetPayments       = "payment_gateways.summary"
	WidgetDataSync       = "data_sync.runs"
)

// widgetWindow is how far back the built-in widgets count: from the
// start of the hour (UTC) this long before the read.
const widgetWindow = 24 * time.Hour

// windowStart is the start of the window of the built-in widgets read at
// now: the start of the hour 24 hours before (so the window is 24 to 25
// hours long). A window starting at an hour is read from kept counts by
// hour where the area keeps them (the webhooks' delivery health), rather
// than from every row of the window.
func windowStart(now time.Time) time.Time { return now.Add(-widgetWindow).Truncate(time.Hour) }

// WindowData is the data of the built-in widgets that count the recent
// past: the window's start and the figures.
type WindowData[T any] struct {
	// Since is the window's start: the start of the hour (UTC) 24 hours
	// before the read, so the window holds the last 24 hours and up to an
	// hour more.
	Since time.Time `json:"since"`
	Items T         `json:"items"`
}

// registerWidgets registers on svc the built-in widgets of the Kit's
// areas.
func registerWidgets(k *tenantkit.Kit, svc *dashboards.Service) error {
	since := func() time.Time { return windowStart(k.DB.Now()) }
	var defs []dashboards.WidgetDefinition
	if webhooksSvc, ok := tenantkit.AreaOf[*webhooks.Service](k); ok {
		defs = append(defs, dashboards.WidgetDefinition{
			ID: WidgetWebhookHealth, Title: "Webhook delivery health",
			Description: "Deliveries of each webhook in the last 24 hours: delivered, failed and pending.",
			Features:    []string{"webhooks.view"}, DefaultEnabled: true, DefaultGrid: dashboards.Grid{X: 0, Y: 0, W: 6, H: 4},
			Data: windowed(since, webhooksSvc.DeliveryHealth),
		})
	}
	if rulesSvc, ok := tenantkit.AreaOf[*rules.Service](k); ok {
		defs = append(defs, dashboards.WidgetDefinition{
			ID: WidgetRuleExecutions, Title: "Rule executions",
			Description: "Rule executions and failures per rule set in the last 24 hours.",
			Features:    []string{"business_rules.rules.view"}, DefaultEnabled: true, DefaultGrid: dashboards.Grid{X: 6, Y: 0, W: 6, H: 4},
			Data: windowed(since, rulesSvc.ExecutionSummary),
		})
	}
	if attachmentsSvc, ok := tenantkit.AreaOf[*attachments.Service](k); ok {
		defs = append(defs, dashboards.WidgetDefinition{
			ID: WidgetStorageUse, Title: "Attachment storage",
			Description: "Bytes and files stored, against the storage quota.",
			Features:    []string{"attachments.view"}, DefaultEnabled: true, DefaultGrid: dashboards.Grid{X: 0, Y: 4, W: 4, H: 3},
			Data: func(ctx context.Context) (any, error) { return attachmentsSvc.StorageUsage(ctx) },
		})
	}
	if paymentsSvc, ok := tenantkit.AreaOf[*payments.Service](k); ok {
		defs = append(defs, dashboards.WidgetDefinition{
			ID: WidgetPayments, Title: "Payments",
			Description: "Payment transactions of the last 24 hours by status, and the amounts received per currency.",
			Features:    []string{"payment_gateways.view"}, DefaultEnabled: true, DefaultGrid: dashboards.Grid{X: 4, Y: 4, W: 8, H: 3},
			Data: func(ctx context.Context) (any, error) {
				from := since()
				summary, err := paymentsSvc.Summary(ctx, from)
				return WindowData[any]{Since: from, Items: summary}, err
			},
		})
	}
	if datasyncSvc, ok := tenantkit.AreaOf[*datasync.Service](k); ok {
		defs = append(defs, dashboards.WidgetDefinition{
			ID: WidgetDataSync, Title: "Data sync runs",
			Description: "Per integration, the latest sync run and the runs of the last 24 hours by status.",
			Features:    []string{"data_sync.view"}, DefaultEnabled: true, DefaultGrid: dashboards.Grid{X: 0, Y: 7, W: 12, H: 3},
			Data: windowed(since, datasyncSvc.Summary),
		})
	}
	for _, d := range defs {
		if err := svc.Register(d); err != nil {
			return err
		}
	}
	return nil
}

// windowed is the Data of a widget listing what read finds since the
// window's start: {since, items}, items [] rather than null when empty.
func windowed[T any](since func() time.Time, read func(context.Context, time.Time) ([]T, error)) func(context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		from := since()
		items, err := read(ctx, from)
		return WindowData[any]{Since: from, Items: nonNilSlice(items)}, err
	}
}

// nonNilSlice makes an empty list encode as [] rather than null.
func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// forgetOnDelete hooks the dashboards into the identity area's deletes, so
// that deleting a user or role removes its visibility records in the same
// transaction.
func forgetOnDelete(id *identity.Service, svc *dashboards.Service) {
	id.OnDelete(func(ctx context.Context, tx *store.Tx, kind, tenantID, id string) error {
		switch kind {
		case identity.DeletedUser:
			return svc.ForgetUser(ctx, tx, tenantID, id)
		case identity.DeletedRole:
			return svc.ForgetRole(ctx, tx, tenantID, id)
		}
		return nil
	})
}

// identityDirectory is a dashboards.Directory over the identity service.
type identityDirectory struct{ svc *identity.Service }

func (d identityDirectory) Role(ctx context.Context, tenantID, roleID string) (dashboards.Access, error) {
	id, err := d.svc.RoleAccess(ctx, tenantID, roleID)
	if err != nil {
		return dashboards.Access{}, err
	}
	return AccessOf(id), nil
}

func (d identityDirectory) User(ctx context.Context, tenantID, userID string) (dashboards.Access, error) {
	id, err := d.svc.UserAccess(ctx, tenantID, userID)
	if err != nil {
		return dashboards.Access{}, err
	}
	a := AccessOf(id)
	a.OrganizationID = id.OrganizationID
	return a, nil
}

// AccessOf is what an identity may see on dashboards: its roles and the
// features it holds (wildcards matched as identity.HasFeature does).
func AccessOf(id *identity.Identity) dashboards.Access {
	return dashboards.Access{RoleIDs: id.RoleIDs, SuperAdmin: id.IsSuperAdmin, Holds: id.HasFeature}
}
