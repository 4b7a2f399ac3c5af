package payments

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Store is the storage of payment transactions, their refunds, kept
// operation answers and received webhooks: what the Service asks of its
// database, in the area's terms. SQLStore (sql.go) is the implementation
// on tenantkit's SQLite and PostgreSQL schema, used when Options.Store is
// nil; paymentstest.Run is the conformance suite any other implementation
// must pass.
//
// Every method takes the Querier to run on: a read gets the *store.DB or a
// transaction, a write the *store.Tx of the Service's change, so that the
// change and its domain event commit together.
//
// Errors: a missing row is an error wrapping store.ErrNotFound, a unique
// constraint broken one wrapping store.ErrConflict; anything else is
// returned as is.
type Store interface {
	// InsertTransaction stores a new transaction.
	InsertTransaction(ctx context.Context, q store.Querier, t *Transaction) error
	// GetTransaction returns the transaction with the id if sc may read it.
	GetTransaction(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Transaction, error)
	// LockTransaction returns the tenant's transaction with the id and
	// holds it until tx ends: no other transaction changes it meanwhile
	// (SELECT … FOR UPDATE on PostgreSQL; SQLite's one writer already
	// serialises).
	LockTransaction(ctx context.Context, tx *store.Tx, tenantID, id string) (*Transaction, error)
	// FindBySession returns the transactions, of any tenant, of the
	// provider's session.
	FindBySession(ctx context.Context, q store.Querier, providerKey, sessionID string) ([]*Transaction, error)
	// ListTransactions returns a page of the transactions sc may read that
	// match f, newest first, and how many match in all.
	ListTransactions(ctx context.Context, q store.Querier, sc store.Scope, f Filter) ([]*Transaction, int, error)
	// UpdateTransaction replaces the status, gateway status, captured and
	// refunded amounts, provider data and updatedAt of the tenant's
	// transaction t.ID.
	UpdateTransaction(ctx context.Context, q store.Querier, t *Transaction) error
	// Summarize groups the transactions sc may read that were created at
	// or after since by currency and status: one SummaryGroup per
	// currency and status with at least one transaction, in any order,
	// with their number and the sum of their captured amounts.
	Summarize(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]SummaryGroup, error)

	// InsertRefund stores a refund.
	InsertRefund(ctx context.Context, q store.Querier, r *Refund) error
	// ListRefunds returns the tenant's refunds of a transaction, oldest
	// first.
	ListRefunds(ctx context.Context, q store.Querier, tenantID, transactionID string) ([]*Refund, error)

	// GetOperation returns the kept answer of the tenant's operation on
	// the transaction.
	GetOperation(ctx context.Context, q store.Querier, tenantID, transactionID, operationID string) (*Operation, error)
	// InsertOperation keeps an operation's answer.
	InsertOperation(ctx context.Context, q store.Querier, op *Operation) error

	// InsertWebhook stores a received webhook unless the tenant already
	// has one of the provider with its idempotency key; inserted reports
	// whether it did.
	InsertWebhook(ctx context.Context, q store.Querier, w *Webhook) (inserted bool, err error)
	// GetWebhook returns the tenant's webhook with the id.
	GetWebhook(ctx context.Context, q store.Querier, tenantID, id string) (*Webhook, error)
	// FinishWebhook records how the tenant's webhook w.ID was processed:
	// its mapped status, outcome, statuses before and after, processedAt.
	FinishWebhook(ctx context.Context, q store.Querier, w *Webhook) error
	// ListWebhooks returns the tenant's webhooks of a transaction, in the
	// order they were received.
	ListWebhooks(ctx context.Context, q store.Querier, tenantID, transactionID string) ([]*Webhook, error)
}
