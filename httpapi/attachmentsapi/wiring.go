package attachmentsapi

import (
	"context"
	"errors"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/jobstatus"
	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
)

// The attachments area reports its text extractions to the progress
// area through this bridge (areas never import each other).

// extractionProgress answers attachments.Progress from the progress area.
type extractionProgress struct {
	db  *store.DB
	svc *progress.Service
}

// extractionTotal is an extraction's item count: the one file.
var extractionTotal = int64(1)

func (b extractionProgress) Create(ctx context.Context, tx *store.Tx, name string) (string, error) {
	j, err := b.svc.CreateTx(ctx, tx, progress.CreateInput{JobType: attachments.ExtractionJobType, Name: name, Total: &extractionTotal})
	if err != nil {
		return "", err
	}
	return j.ID, nil
}

func (b extractionProgress) Begin(ctx context.Context, id string) error {
	_, err := b.svc.Begin(ctx, id)
	return err
}

// Finish counts the file processed when the job completes, and finishes
// the job, in one transaction (a job not running, or finished already,
// is left to FinishTx to judge).
func (b extractionProgress) Finish(ctx context.Context, id string, status jobstatus.Status, message string) error {
	return b.db.Tx(ctx, func(tx *store.Tx) error {
		if status == jobstatus.Completed {
			if _, err := b.svc.ReportTx(ctx, tx, id, extractionTotal, nil); err != nil && !errors.Is(err, progress.ErrNotRunning) && !errors.Is(err, progress.ErrFinished) {
				return err
			}
		}
		_, err := b.svc.FinishTx(ctx, tx, id, status, message)
		return err
	})
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
