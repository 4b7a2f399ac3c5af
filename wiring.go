package tenantkit

import (
	"context"
	"fmt"
	"slices"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/dashboards"
	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/toggles"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The names of the areas, as Config.Areas lists them.
const (
	AreaIdentity      = "identity"
	AreaToggles       = "toggles"
	AreaRules         = "rules"
	AreaWebhooks      = "webhooks"
	AreaEntities      = "entities"
	AreaAttachments   = "attachments"
	AreaIntegrations  = "integrations"
	AreaPayments      = "payments"
	AreaDashboards    = "dashboards"
	AreaProgress      = "progress"
	AreaDataSync      = "datasync"
	AreaNotifications = "notifications"
)

// areaOrder is every area, in the order a Kit migrates and starts them.
var areaOrder = []string{
	AreaIdentity, AreaToggles, AreaRules, AreaWebhooks, AreaEntities, AreaAttachments,
	AreaIntegrations, AreaPayments, AreaDashboards, AreaProgress, AreaDataSync, AreaNotifications,
}

// areaNeeds lists, for the areas that cannot work alone, the areas they
// are built on. The Kit adds them when Config.Areas leaves them out.
var areaNeeds = map[string][]string{
	// Attachments are attached to records and validated against the
	// custom fields of their entity.
	AreaAttachments: {AreaEntities},
	// A tenant's gateway credentials live in its gateway integration, and
	// provider calls are logged there.
	AreaPayments: {AreaIntegrations},
	// Sync runs move custom entity records through an integration's
	// adapter and report as progress jobs.
	AreaDataSync: {AreaEntities, AreaIntegrations, AreaProgress},
}

// AllAreas returns the name of every area, in the order a Kit migrates and
// starts them: what a Kit has when Config.Areas is nil.
func AllAreas() []string { return slices.Clone(areaOrder) }

// chooseAreas resolves Config.Areas: nil is every area; otherwise the named
// areas and the areas they need (areaNeeds).
func chooseAreas(names []string) (map[string]bool, error) {
	if names == nil {
		names = areaOrder
	}
	chosen := map[string]bool{}
	var add func(name string) error
	add = func(name string) error {
		if !slices.Contains(areaOrder, name) {
			return fmt.Errorf("tenantkit: unknown area %q in Config.Areas (known: %v)", name, areaOrder)
		}
		if chosen[name] {
			return nil
		}
		chosen[name] = true
		for _, need := range areaNeeds[name] {
			if err := add(need); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range names {
		if err := add(name); err != nil {
			return nil, err
		}
	}
	return chosen, nil
}

// newAreas builds the chosen areas over db, in the order they migrate and
// start, and wires the areas present to one another (areas never import
// each other; what one needs of another reaches it through a small
// interface in its Options, set here). It is the one place that knows each
// area's constructor.
func newAreas(db *store.DB, cfg Config, chosen map[string]bool) ([]Area, error) {
	built := map[string]Area{}
	// Areas others are wired to are built first.
	var integrationsSvc *integrations.Service
	if chosen[AreaIntegrations] {
		var err error
		if integrationsSvc, err = integrations.New(db, integrations.Options{SecretKey: cfg.SecretKey}); err != nil {
			return nil, fmt.Errorf("tenantkit: integrations: %w", err)
		}
		built[AreaIntegrations] = integrationsSvc
	}
	var identitySvc *identity.Service
	if chosen[AreaIdentity] {
		idOpts := cfg.Identity
		idOpts.SecretKey = cfg.SecretKey
		if idOpts.Logger == nil {
			idOpts.Logger = cfg.Logger
		}
		var err error
		if identitySvc, err = identity.New(db, idOpts); err != nil {
			return nil, fmt.Errorf("tenantkit: identity: %w", err)
		}
		built[AreaIdentity] = identitySvc
	}
	var webhooksSvc *webhooks.Service
	if chosen[AreaWebhooks] {
		whOpts := cfg.Webhooks
		whOpts.SecretKey = cfg.SecretKey
		if whOpts.TenantEnabled == nil && integrationsSvc != nil {
			// A tenant's custom-webhooks integration switches its
			// outbound webhooks on and off.
			whOpts.TenantEnabled = func(ctx context.Context, tenantID string) (bool, error) {
				return integrationsSvc.Enabled(ctx, tenantID, IntegrationWebhooks)
			}
		}
		var err error
		if webhooksSvc, err = webhooks.New(db, whOpts); err != nil {
			return nil, fmt.Errorf("tenantkit: webhooks: %w", err)
		}
		built[AreaWebhooks] = webhooksSvc
	}
	var entitiesSvc *entities.Service
	if chosen[AreaEntities] {
		var err error
		if entitiesSvc, err = entities.New(db, entities.Options{}); err != nil {
			return nil, fmt.Errorf("tenantkit: entities: %w", err)
		}
		built[AreaEntities] = entitiesSvc
	}
	var progressSvc *progress.Service
	if chosen[AreaProgress] {
		var err error
		if progressSvc, err = progress.New(db, cfg.Progress); err != nil {
			return nil, fmt.Errorf("tenantkit: progress: %w", err)
		}
		built[AreaProgress] = progressSvc
	}
	if chosen[AreaToggles] {
		svc, err := toggles.New(db, toggles.Options{Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("tenantkit: toggles: %w", err)
		}
		built[AreaToggles] = svc
	}
	if chosen[AreaRules] {
		rulesOpts := cfg.Rules
		if rulesOpts.Signer == nil && webhooksSvc != nil {
			// CALL_WEBHOOK calls are signed like deliveries, with the
			// secrets of the tenant's webhook registered for the call's
			// URL.
			rulesOpts.Signer = webhooksSvc
		}
		svc, err := rules.New(db, rulesOpts)
		if err != nil {
			return nil, fmt.Errorf("tenantkit: rules: %w", err)
		}
		built[AreaRules] = svc
	}
	if chosen[AreaAttachments] {
		att, err := newAttachments(db, cfg, entitiesSvc, progressSvc)
		if err != nil {
			return nil, err
		}
		built[AreaAttachments] = att
	}
	if chosen[AreaPayments] {
		pay, err := newPayments(db, cfg, integrationsSvc)
		if err != nil {
			return nil, err
		}
		built[AreaPayments] = pay
	}
	if chosen[AreaDashboards] {
		dashOpts := cfg.Dashboards
		if dashOpts.Directory == nil && identitySvc != nil {
			// The role and user visibility routes look roles and users
			// up in the identity area.
			dashOpts.Directory = identityDirectory{identitySvc}
		}
		svc, err := dashboards.New(db, dashOpts)
		if err != nil {
			return nil, fmt.Errorf("tenantkit: dashboards: %w", err)
		}
		built[AreaDashboards] = svc
	}
	if chosen[AreaDataSync] {
		syncOpts := cfg.DataSync
		syncOpts.Integrations, syncOpts.Records = syncIntegrations{integrationsSvc}, syncRecords{entitiesSvc}
		syncOpts.Progress = syncProgress{progressSvc}
		if syncOpts.Logger == nil {
			syncOpts.Logger = cfg.Logger
		}
		svc, err := datasync.New(db, syncOpts)
		if err != nil {
			return nil, fmt.Errorf("tenantkit: datasync: %w", err)
		}
		built[AreaDataSync] = svc
	}
	if chosen[AreaNotifications] {
		noteOpts := cfg.Notifications
		if noteOpts.Recipients == nil && identitySvc != nil {
			// The feeds address the identity area's users, by id, email
			// or role name.
			noteOpts.Recipients = identityRecipients{identitySvc}
		}
		svc, err := notifications.New(db, noteOpts)
		if err != nil {
			return nil, fmt.Errorf("tenantkit: notifications: %w", err)
		}
		built[AreaNotifications] = svc
	}
	areas := make([]Area, 0, len(built))
	for _, name := range areaOrder {
		if a, ok := built[name]; ok {
			areas = append(areas, a)
		}
	}
	return areas, nil
}

// newAttachments builds the attachments area: custom fields from the
// entities area, extractions reported as progress jobs when the Kit has
// the progress area, files where Config says.
func newAttachments(db *store.DB, cfg Config, entitiesSvc *entities.Service, progressSvc *progress.Service) (*attachments.Service, error) {
	attOpts := cfg.Attachments
	if attOpts.Fields == nil {
		attOpts.Fields = entityFields{entitiesSvc}
	}
	if attOpts.Progress == nil && progressSvc != nil {
		attOpts.Progress = extractionProgress{db, progressSvc}
	}
	if attOpts.Blobs == nil && cfg.FilesInDatabase {
		attOpts.Blobs = attachments.NewSQLBlobs(db)
	}
	if attOpts.Blobs == nil && cfg.FilesDir != "" {
		blobs, err := attachments.NewFSBlobs(cfg.FilesDir)
		if err != nil {
			return nil, fmt.Errorf("tenantkit: attachments: %w", err)
		}
		attOpts.Blobs = blobs
	}
	if attOpts.Logger == nil {
		attOpts.Logger = cfg.Logger
	}
	svc, err := attachments.New(db, attOpts)
	if err != nil {
		return nil, fmt.Errorf("tenantkit: attachments: %w", err)
	}
	return svc, nil
}

// newPayments builds the payments area: a tenant's credentials stored in
// its gateway integration win, the configured source (the environment by
// default) fills the rest, and provider calls are logged under the gateway
// integration.
func newPayments(db *store.DB, cfg Config, integrationsSvc *integrations.Service) (*payments.Service, error) {
	payOpts := cfg.Payments
	if payOpts.Credentials == nil {
		payOpts.Credentials = payments.EnvCredentials{}
	}
	payOpts.Credentials = payments.Fallback(integrationCredentials(integrationsSvc), payOpts.Credentials)
	if payOpts.IntegrationLog == nil {
		payOpts.IntegrationLog = paymentsLog(integrationsSvc)
	}
	if payOpts.Logger == nil {
		payOpts.Logger = cfg.Logger
	}
	svc, err := payments.New(db, payOpts)
	if err != nil {
		return nil, fmt.Errorf("tenantkit: payments: %w", err)
	}
	return svc, nil
}

// entityFields gives the attachments area the entities area's custom
// field definitions.
type entityFields struct{ svc *entities.Service }

func (f entityFields) CheckValues(ctx context.Context, entityID string, values map[string]any, partial bool) (map[string]any, error) {
	return f.svc.CheckValues(ctx, entityID, values, partial)
}

func (f entityFields) FieldConfig(ctx context.Context, entityID, key string) (map[string]any, error) {
	d, err := f.svc.Field(ctx, entityID, key)
	if err != nil {
		return nil, err
	}
	return d.ConfigJSON, nil
}
