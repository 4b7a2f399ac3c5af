package datasyncapi

import (
	"context"
	"errors"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
)

// The data sync area reaches the integrations, entities and progress
// areas through these bridges (areas never import each other).

// syncIntegrations answers datasync.Integrations from the integrations
// area.
type syncIntegrations struct{ svc *integrations.Service }

func (b syncIntegrations) Integration(ctx context.Context, tenantID, id string) (*datasync.Integration, error) {
	d, ok := b.svc.Definition(id)
	if !ok {
		return nil, store.ErrNotFound
	}
	out := &datasync.Integration{ID: id, ProviderKey: d.ProviderKey}
	st, err := b.svc.TenantState(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	out.Enabled = st.IsEnabled
	if st.APIVersion != nil {
		out.APIVersion = *st.APIVersion
	}
	values, err := b.svc.Values(ctx, tenantID, id)
	switch {
	case err == nil:
		out.Credentials = values
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	return out, nil
}

func (b syncIntegrations) Log(ctx context.Context, q store.Querier, e datasync.LogEntry) error {
	entry := integrations.LogEntry{IntegrationID: e.IntegrationID, Level: e.Level, Message: e.Message, Payload: e.Payload}
	for dst, v := range map[**string]string{&entry.RunID: e.RunID, &entry.Code: e.Code, &entry.EntityType: e.EntityType, &entry.EntityID: e.EntityID} {
		if v != "" {
			*dst = &v
		}
	}
	return b.svc.LogTx(ctx, q, entry)
}

// RecordHealth keeps a validate's connection check in the tenant's
// integration state (datasync.HealthRecorder).
func (b syncIntegrations) RecordHealth(ctx context.Context, id string, healthy bool, latency time.Duration) error {
	status := integrations.HealthUnhealthy
	if healthy {
		status = integrations.HealthHealthy
	}
	_, err := b.svc.RecordHealth(ctx, id, status, latency)
	return err
}

// syncRecords answers datasync.Records from the entities area: a sync's
// entity types are the tenant's active custom entities.
type syncRecords struct{ svc *entities.Service }

func (b syncRecords) EntityTypes(ctx context.Context) ([]string, error) {
	return b.svc.ActiveCustomEntities(ctx)
}

func (b syncRecords) Upsert(ctx context.Context, tx *store.Tx, entityType string, items []datasync.Upsert) ([]datasync.Outcome, error) {
	ups := make([]entities.RecordUpsert, len(items))
	for i, it := range items {
		ups[i] = entities.RecordUpsert{RecordID: it.RecordID, Values: it.Values}
	}
	res, err := b.svc.UpsertRecordsTx(ctx, tx, entityType, ups)
	if err != nil {
		return nil, err
	}
	out := make([]datasync.Outcome, len(res))
	for i, r := range res {
		out[i] = datasync.Outcome{Created: r.Created, Skipped: r.Skipped, Err: r.Err}
		if errors.Is(r.Err, entities.ErrOutsideScope) {
			out[i].Err = datasync.ErrOutsideScope // in the run's words
		}
	}
	return out, nil
}

func (b syncRecords) Read(ctx context.Context, entityType, afterID string, limit int) ([]datasync.ExportItem, error) {
	records, err := b.svc.RecordsAfter(ctx, entityType, afterID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]datasync.ExportItem, len(records))
	for i, r := range records {
		out[i] = datasync.ExportItem{LocalID: r.ID, Data: r.Values}
	}
	return out, nil
}

// syncProgress answers datasync.Progress from the progress area.
type syncProgress struct{ svc *progress.Service }

func (b syncProgress) Create(ctx context.Context, tx *store.Tx, name string) (string, error) {
	j, err := b.svc.CreateTx(ctx, tx, progress.CreateInput{JobType: "data_sync.run", Name: name, Cancellable: false})
	if err != nil {
		return "", err
	}
	return j.ID, nil
}

func (b syncProgress) Begin(ctx context.Context, tx *store.Tx, id string) error {
	_, err := b.svc.BeginTx(ctx, tx, id)
	return err
}

func (b syncProgress) Report(ctx context.Context, tx *store.Tx, id string, processed int64, total *int64) error {
	if total != nil && *total < processed {
		total = &processed // a source's estimate fell short
	}
	_, err := b.svc.ReportTx(ctx, tx, id, processed, total)
	return err
}

func (b syncProgress) Finish(ctx context.Context, tx *store.Tx, id string, status datasync.Status, message string) error {
	_, err := b.svc.FinishTx(ctx, tx, id, status, message)
	return err
}

func (b syncProgress) Get(ctx context.Context, id string) (*datasync.ProgressJob, error) {
	j, err := b.svc.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &datasync.ProgressJob{ID: j.ID, Status: string(j.Status), ProgressPercent: j.ProgressPercent,
		ProcessedCount: j.ProcessedCount, TotalCount: j.TotalCount, EtaSeconds: j.ETASeconds}, nil
}
