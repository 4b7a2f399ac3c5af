package attachments

import (
	"context"
	"math"

	"github.com/tenantkit/tenantkit/store"
)

// StorageUsage is how much of its storage quota a tenant uses: what a
// dashboard shows beside the 413 an upload past the quota gets.
type StorageUsage struct {
	// UsedBytes is the sum of the tenant's file sizes, exactly as the
	// quota check counts it (Store.Usage, the attachment_usage total kept
	// in every upload's and delete's transaction). Resized images do not
	// count.
	UsedBytes int64 `json:"usedBytes"`
	// QuotaBytes is the quota each tenant has (Options.TenantQuotaBytes,
	// APP_ATTACHMENT_TENANT_QUOTA_MB); 0 when there is none.
	QuotaBytes int64 `json:"quotaBytes"`
	// Files is how many attachments the tenant has (Store.CountAttachments),
	// the files whose sizes UsedBytes sums.
	Files int `json:"files"`
	// UsedPercent is UsedBytes/QuotaBytes*100 rounded to one decimal; 0
	// without a quota. It passes 100 when a lowered quota is below what
	// is stored already.
	UsedPercent float64 `json:"usedPercent"`
}

// StorageUsage returns the storage the caller's tenant uses and the quota
// that bounds it. The figures are the tenant's, of every organization,
// whatever organizations the caller may read: the quota is per tenant
// (one Options.TenantQuotaBytes, applied to each tenant's total), and the
// upload path checks it against that total, so these are the numbers an
// upload is measured by. No scope in ctx is an error wrapping
// store.ErrNoScope.
//
// The total and the count are read in one read transaction; on
// PostgreSQL (read committed) an upload or delete that commits between
// the two reads can show in one and not yet in the other.
func (s *Service) StorageUsage(ctx context.Context) (*StorageUsage, error) {
	sc, err := scope(ctx)
	if err != nil {
		return nil, err
	}
	var u StorageUsage
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		var err error
		if u.UsedBytes, err = s.store.Usage(ctx, tx, sc.TenantID); err != nil {
			return err
		}
		u.Files, err = s.store.CountAttachments(ctx, tx, sc.TenantID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.opts.TenantQuotaBytes > 0 {
		u.QuotaBytes = s.opts.TenantQuotaBytes
		u.UsedPercent = usedPercent(u.UsedBytes, u.QuotaBytes)
	}
	return &u, nil
}

// usedPercent is used/quota*100 rounded to one decimal (quota > 0).
func usedPercent(used, quota int64) float64 {
	return math.Round(float64(used)/float64(quota)*1000) / 10
}
