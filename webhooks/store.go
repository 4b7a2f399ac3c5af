package webhooks

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage the service runs on. Every method runs on the
// Querier it is given: the database, or the transaction the service
// holds, so that what it writes commits with the rest of the change (an
// emitted event, a job). The service opens the transactions; a Store never
// does.
//
// SQLStore is the implementation on both of the store package's engines,
// and the default (Options.Store). webhookstest.Run is the conformance
// suite a Store must pass. Reads by id of something missing, or not the
// scope's, and writes that find nothing to change, return
// store.ErrNotFound; ids that are not store ids are simply not found.
type Store interface {
	// InsertWebhook adds w (with its CreatedAt and UpdatedAt set) and its
	// signing secret, sealed. A taken id is store.ErrConflict.
	InsertWebhook(ctx context.Context, q store.Querier, w *Webhook, sealedSecret string) error
	// GetWebhook returns a live (not deleted) webhook sc may read: sc's
	// tenant's, of no organization or of one sc.AllowsOrganization.
	GetWebhook(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Webhook, error)
	// UpdateWebhook stores a live webhook's settings (every field the
	// service's Patch changes, and UpdatedAt), found by tenant and id.
	UpdateWebhook(ctx context.Context, q store.Querier, w *Webhook) error
	// RotateSecret makes sealed a live webhook's secret and its current
	// one the previous, signing until r.PreviousSecretExpiresAt;
	// r.PreviousSecretSetAt is the rotation's time (and UpdatedAt).
	RotateSecret(ctx context.Context, q store.Querier, tenantID, id, sealed string, r *Rotation) error
	// DeleteWebhook soft-deletes a live webhook at at: reads other than
	// SealedWebhook no longer find it.
	DeleteWebhook(ctx context.Context, q store.Querier, tenantID, id string, at time.Time) error
	// ListWebhooks returns the page f selects of the live webhooks sc may
	// read, newest first (CreatedAt, then id, descending), and how many f
	// selects in all. Search matches name or URL, case-insensitively, as
	// text (%, _ and \ are not wildcards); text the store cannot hold
	// matches nothing. With a search, the total counts at most
	// store.SearchCap(ctx)+1 matches (store.CountCapped): a larger total
	// than store.SearchCap(ctx) means that more match.
	ListWebhooks(ctx context.Context, q store.Querier, sc store.Scope, f Filter) ([]*Webhook, int, error)
	// ActiveWebhooks returns the tenant's live, active webhooks, every
	// organization's, in any order.
	ActiveWebhooks(ctx context.Context, q store.Querier, tenantID string) ([]*Webhook, error)
	// SealedWebhook returns a webhook of the tenant, deleted or not, with
	// its sealed secrets: what sending its deliveries needs.
	SealedWebhook(ctx context.Context, q store.Querier, tenantID, id string) (*SealedWebhook, error)
	// SigningWebhook returns, with its sealed secrets, the tenant's oldest
	// (CreatedAt, then id) live, active webhook whose URL is exactly url.
	SigningWebhook(ctx context.Context, q store.Querier, tenantID, url string) (*SealedWebhook, error)
	// RecordResults stores a webhook's consecutive failures and, when not
	// nil, its last success and last failure times; false when there is no
	// such webhook.
	RecordResults(ctx context.Context, q store.Querier, tenantID, id string, failures int, lastSuccess, lastFailure *time.Time) (bool, error)
	// Deactivate makes an active webhook inactive at at; false when it
	// was not active (or is not there).
	Deactivate(ctx context.Context, q store.Querier, tenantID, id string, at time.Time) (bool, error)
	// DropExpiredSecrets erases, in every tenant, each previous secret
	// whose expiry is at or before now (with its times), and returns how
	// many it erased.
	DropExpiredSecrets(ctx context.Context, q store.Querier, now time.Time) (int64, error)

	// InsertDeliveries adds new deliveries (status pending, attempt 0)
	// and returns how many it added. It keeps the counts of the
	// deliveries (by webhook, event type and status) that ListDeliveries'
	// totals read, in the same transaction, without making concurrent
	// inserts wait on each other; the other writes of a delivery's status
	// keep them too.
	InsertDeliveries(ctx context.Context, q store.Querier, ds []*Delivery) (int64, error)
	// FoldDeliveryCounts compacts the kept delivery counts ListDeliveries'
	// totals (and SQLStore's DeliveryHealth) read: for up to limit counts
	// (across tenants) changed since its last fold, it folds the rows
	// written since into one of their sum, leaving every count as it was,
	// and returns how many rows it folded (0: nothing was left to fold);
	// a store may also drop counts it no longer reads (SQLStore: those of
	// hours older than two days, counted in what it returns). It is
	// safe to run concurrently with itself, with InsertDeliveries and
	// with every change of a delivery's status.
	FoldDeliveryCounts(ctx context.Context, q store.Querier, limit int) (int64, error)
	// GetDelivery returns a delivery sc may read (by its webhook's
	// organization), with its payload and response, and its webhook's
	// name.
	GetDelivery(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Delivery, error)
	// ListDeliveries returns the page f selects of the deliveries sc may
	// read, newest first (CreatedAt, then id, descending), without
	// payloads and responses, and how many f selects in all. A filter
	// value the store cannot hold (or a webhook id that is no id) matches
	// nothing.
	ListDeliveries(ctx context.Context, q store.Querier, sc store.Scope, f DeliveryFilter) ([]*Delivery, int, error)
	// UpdateDelivery stores a delivery's state: status, attempt, max
	// attempts, response, error, duration, next retry, last attempt,
	// delivered and updated times.
	UpdateDelivery(ctx context.Context, q store.Querier, d *Delivery) error
	// MarkSending stores that d's attempt d.Attempt started at
	// d.LastAttemptAt (status d.Status).
	MarkSending(ctx context.Context, q store.Querier, d *Delivery) error
	// ClaimDeliveries returns up to n of the webhook's deliveries due at
	// now (pending or sending, with no next retry or one at or before
	// now), in order of their event ids, then ids, and marks them sending
	// at now (LastAttemptAt, UpdatedAt); a pending one starts its next
	// attempt (attempt + 1), a sending one (cut short) keeps its attempt.
	// They are returned as marked.
	ClaimDeliveries(ctx context.Context, q store.Querier, tenantID, webhookID string, now time.Time, n int) ([]*Delivery, error)
	// UnclaimDelivery puts a claimed delivery that was not sent back to
	// pending at now, with d.Attempt - 1 attempts (the claim's given back).
	UnclaimDelivery(ctx context.Context, q store.Querier, d *Delivery, now time.Time) error
	// ExpireDeliveries ends every delivery of the webhook still to send
	// (pending, retries included, or sending) as expired with reason and
	// no next retry, and returns how many.
	ExpireDeliveries(ctx context.Context, q store.Querier, tenantID, webhookID, reason string, now time.Time) (int64, error)
	// DeliveryHealth returns one entry per live webhook sc may read (as
	// ListWebhooks), those without deliveries included with zero counts,
	// ordered by name, then id (byte order), with the counts of its
	// deliveries created at or after since (to the microsecond) by
	// status: delivered; failed or expired; pending or sending. Deliveries
	// of other statuses are in no count.
	DeliveryHealth(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]DeliveryHealth, error)

	// InsertInbound stores an accepted inbound message unless its
	// endpoint has one with its id (then false: a duplicate).
	InsertInbound(ctx context.Context, q store.Querier, r *InboundReceipt) (bool, error)
	// GetInbound returns an inbound message by endpoint and message id.
	GetInbound(ctx context.Context, q store.Querier, endpointID, messageID string) (*InboundReceipt, error)
	// MarkInboundProcessed stores that an unprocessed message was
	// processed at at.
	MarkInboundProcessed(ctx context.Context, q store.Querier, endpointID, messageID string, at time.Time) error

	// The webhooks' delivery queues (drain.Key{Group: tenant id, ID:
	// webhook id}): the lease rows, and as items the deliveries
	// ClaimDeliveries would take.
	drain.Store
}

// SealedWebhook is a webhook with what only sending needs: whether it is
// deleted, and its signing secrets as stored.
type SealedWebhook struct {
	*Webhook
	// Deleted is whether the webhook is soft-deleted.
	Deleted bool
	// Secret is the current signing secret, sealed with the Kit's key
	// (opaque to the store).
	Secret string
	// PreviousSecret is the secret rotated out, sealed; "" when none.
	PreviousSecret string
}

// InboundReceipt is an inbound message as stored.
type InboundReceipt struct {
	EndpointID string
	Message    Inbound
	// TenantID and OrganizationID are the endpoint's ("" when none).
	TenantID, OrganizationID string
	ReceivedAt               time.Time // when the message was accepted
	// ProcessedAt is nil until the message has been processed.
	ProcessedAt *time.Time
}
