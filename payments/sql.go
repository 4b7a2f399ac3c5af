package payments

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/tenantkit/tenantkit/internal/jsonenc"
	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on the store package's engines, SQLite and
// PostgreSQL: the same SQL serves both. Its tables are Migrations'.
type SQLStore struct{}

// NewSQLStore returns the SQL store.
func NewSQLStore() *SQLStore { return &SQLStore{} }

const transactionColumns = "id, tenant_id, COALESCE(organization_id, ''), payment_id, provider_key, session_id, status, " +
	"gateway_status, amount, captured_amount, refunded_amount, currency_code, capture_method, description, metadata, " +
	"redirect_url, provider_data, created_at, updated_at"

func scanTransaction(s store.Scanner) (*Transaction, error) {
	var t Transaction
	var metadata, providerData []byte
	if err := s.Scan(&t.ID, &t.TenantID, &t.OrganizationID, &t.PaymentID, &t.ProviderKey, &t.SessionID, &t.Status,
		&t.GatewayStatus, &t.Amount, &t.CapturedAmount, &t.RefundedAmount, &t.Currency, &t.CaptureMethod, &t.Description,
		&metadata, &t.RedirectURL, &providerData, &t.CreatedAt, &t.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(metadata, &t.Metadata); err != nil {
		return nil, err
	}
	if len(providerData) > 0 {
		if err := json.Unmarshal(providerData, &t.ProviderData); err != nil {
			return nil, err
		}
	}
	return &t, nil
}

// jsonText marshals a JSON column's value (bound as a string on both
// engines); nil stays NULL.
func jsonText(v map[string]any) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := jsonenc.AppendObject(nil, v) // json.Marshal's bytes, without reflection
	return string(b), err
}

const insertWebhookSQL = `INSERT INTO payment_webhooks (id, tenant_id, transaction_id, provider_key, idempotency_key,
	event_type, event_id, provider_status, amount, mapped_status, received_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`

// transactionInserts writes new transactions with multi-row INSERTs
// (InsertTransactions).
var transactionInserts = store.NewBatchInsert("payment_transactions", `id, tenant_id, organization_id, payment_id,
	provider_key, session_id, status, gateway_status, amount, captured_amount, refunded_amount, currency_code,
	capture_method, description, metadata, redirect_url, provider_data, created_at, updated_at`, "")

// PrepareWrites prepares the inserts of sessions and webhooks (and the
// event insert) on db, so that the Service's frequent writes skip
// parsing them (store.DB.Prepare). Failures only cost speed.
func (*SQLStore) PrepareWrites(ctx context.Context, db *store.DB) {
	_ = db.Prepare(ctx, insertWebhookSQL)
	if transactionWriters[db.Dialect()] == nil {
		transactionInserts.Prepare(ctx, db)
		transactionCounts.Prepare(ctx, db)
	}
	for _, q := range transactionStatements {
		_ = db.Prepare(ctx, q)
	}
	db.PrepareEmitMany(ctx)
}

// InsertTransaction implements Store.
func (st *SQLStore) InsertTransaction(ctx context.Context, q store.Querier, t *Transaction) error {
	return st.InsertTransactions(ctx, q, []*Transaction{t})
}

// InsertTransactions is InsertTransaction of several transactions at
// once, as the Service writes the sessions of one shared transaction: on
// PostgreSQL one statement (sql_postgres.go), elsewhere the rows in
// multi-row INSERTs (a few statements whatever their number), then their
// counts in one upsert.
func (*SQLStore) InsertTransactions(ctx context.Context, q store.Querier, ts []*Transaction) error {
	if write := transactionWriters[q.Dialect()]; write != nil {
		if err := write(ctx, q, ts); err != nil {
			return err
		}
		for _, t := range ts {
			t.locked = &countedAs{in: q, org: t.OrganizationID, status: string(t.Status), provider: t.ProviderKey}
		}
		return nil
	}
	values := make([]any, 0, len(ts)*transactionInserts.Columns())
	deltas := make([]store.CountDelta, len(ts))
	for i, t := range ts {
		metadata := t.Metadata
		if metadata == nil {
			metadata = map[string]any{}
		}
		meta, err := jsonText(metadata)
		if err != nil {
			return err
		}
		data, err := jsonText(t.ProviderData)
		if err != nil {
			return err
		}
		values = append(values, t.ID, t.TenantID, nullable(t.OrganizationID), t.PaymentID, t.ProviderKey, t.SessionID,
			string(t.Status), t.GatewayStatus, t.Amount, t.CapturedAmount, t.RefundedAmount, t.Currency, t.CaptureMethod,
			t.Description, meta, t.RedirectURL, data, t.CreatedAt, t.UpdatedAt)
		deltas[i] = store.CountDelta{Key: countKey(t.TenantID, t.OrganizationID, string(t.Status), t.ProviderKey), N: 1}
	}
	if _, err := transactionInserts.InsertValues(ctx, q, values); err != nil {
		return err
	}
	for _, t := range ts {
		// Inserted in q's transaction, the row is this transaction's to
		// update: it remembers its counted key as LockTransaction does.
		t.locked = &countedAs{in: q, org: t.OrganizationID, status: string(t.Status), provider: t.ProviderKey}
	}
	return transactionCounts.Add(ctx, q, deltas...)
}

// transactionWriters holds, by Dialect, an engine's own write of new
// transactions and their counts (sql_postgres.go: one statement); an
// engine without one uses transactionInserts and transactionCounts.Add.
// transactionStatements are statement texts they run, which
// PrepareWrites prepares.
var (
	transactionWriters    = map[store.Dialect]func(ctx context.Context, q store.Querier, ts []*Transaction) error{}
	transactionStatements []string
)

// transactionCounts keeps how many transactions each tenant has per
// organization, status and provider (migration 0002).
var transactionCounts = store.NewCounts("payment_transaction_counts", "tenant_id", "organization_id", "status", "provider_key")

func countKey(tenantID, org, status, provider string) []string {
	return []string{tenantID, org, status, provider}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// GetTransaction implements Store.
func (*SQLStore) GetTransaction(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Transaction, error) {
	c := sc.Readable("tenant_id", "organization_id").And("id = ?", id)
	return store.One(ctx, q, scanTransaction, `SELECT `+transactionColumns+` FROM payment_transactions WHERE `+c.SQL(),
		c.Values()...)
}

// LockTransaction implements Store. The transaction it returns
// remembers its counted key (organization, status, provider), so that
// UpdateTransaction in the same transaction need not read it again.
func (*SQLStore) LockTransaction(ctx context.Context, tx *store.Tx, tenantID, id string) (*Transaction, error) {
	t, err := store.One(ctx, tx, scanTransaction, `SELECT `+transactionColumns+` FROM payment_transactions
		WHERE tenant_id = $1 AND id = $2`+tx.Dialect().ForUpdate(), tenantID, id)
	if err != nil {
		return nil, err
	}
	t.locked = &countedAs{in: tx, org: t.OrganizationID, status: string(t.Status), provider: t.ProviderKey}
	return t, nil
}

// countedAs is the key a transaction is counted under, as read or
// written in the database transaction in.
type countedAs struct {
	in                    store.Querier
	org, status, provider string
}

// FindBySession implements Store.
func (*SQLStore) FindBySession(ctx context.Context, q store.Querier, providerKey, sessionID string) ([]*Transaction, error) {
	return store.Many(ctx, q, scanTransaction, `SELECT `+transactionColumns+` FROM payment_transactions
		WHERE provider_key = $1 AND session_id = $2 ORDER BY created_at, id`, providerKey, sessionID)
}

// ListTransactions implements Store.
func (*SQLStore) ListTransactions(ctx context.Context, q store.Querier, sc store.Scope, f Filter) ([]*Transaction, int, error) {
	c := sc.Readable("tenant_id", "organization_id")
	if f.Status != "" {
		c.And("status = ?", string(f.Status))
	}
	if f.ProviderKey != "" {
		c.And("provider_key = ?", f.ProviderKey)
	}
	k := sc.ReadableCounted("tenant_id", "organization_id")
	if f.Status != "" {
		k.And("status = ?", string(f.Status))
	}
	if f.ProviderKey != "" {
		k.And("provider_key = ?", f.ProviderKey)
	}
	total, err := transactionCounts.Sum(ctx, q, k)
	if err != nil {
		return nil, 0, err
	}
	items, err := store.Many(ctx, q, scanTransaction, `SELECT `+transactionColumns+` FROM payment_transactions WHERE `+
		c.SQL()+c.OrderPage("created_at", "id", true, f.Limit, f.Offset), c.Values()...)
	return items, total, err
}

// UpdateTransaction implements Store. A status change moves the
// transaction between the kept counts, from the status LockTransaction
// read (or InsertTransaction wrote) in q's transaction, or else the
// stored one, read and locked here.
func (*SQLStore) UpdateTransaction(ctx context.Context, q store.Querier, t *Transaction) error {
	data, err := jsonText(t.ProviderData)
	if err != nil {
		return err
	}
	was := t.locked
	if was == nil || was.in != q {
		was = &countedAs{}
		if err := q.QueryRow(ctx, `SELECT COALESCE(organization_id, ''), status, provider_key FROM payment_transactions
			WHERE tenant_id = $1 AND id = $2`+q.Dialect().ForUpdate(), t.TenantID, t.ID).Scan(&was.org, &was.status, &was.provider); err != nil {
			return err
		}
	}
	// The list's counts first, then the row, whose trigger (PostgreSQL
	// migration 0003) writes the summary's counts: the order in which
	// new transactions take them (PostgreSQL's one statement upserts the
	// counts, and its statement trigger the summary's at the end). The
	// other order deadlocked against a batch of new sessions holding a
	// count row this change needed while it waited for a summary row
	// this change held (a soak, payment_transaction_counts against
	// payment_summary_hours).
	if was.status != string(t.Status) {
		if err := transactionCounts.Add(ctx, q, store.CountDelta{Key: countKey(t.TenantID, was.org, was.status, was.provider), N: -1},
			store.CountDelta{Key: countKey(t.TenantID, was.org, string(t.Status), was.provider), N: 1}); err != nil {
			return err
		}
	}
	if err := store.ExecOne(ctx, q, `UPDATE payment_transactions SET status = $3, gateway_status = $4,
		captured_amount = $5, refunded_amount = $6, provider_data = $7, updated_at = $8
		WHERE tenant_id = $1 AND id = $2`,
		t.TenantID, t.ID, string(t.Status), t.GatewayStatus, t.CapturedAmount, t.RefundedAmount, data, t.UpdatedAt); err != nil {
		return err
	}
	t.locked = &countedAs{in: q, org: was.org, status: string(t.Status), provider: was.provider}
	return nil
}

// Summarize implements Store. The whole hours from since on are summed
// from the kept counts by hour of creation (payment_summary_hours,
// migration 0003: a few rows per hour, however many transactions it
// had); the transactions before the first whole hour, when since is not
// the start of an hour, are counted from the tenant's index. since is
// compared in UTC (SQLite compares its stored times as text).
func (*SQLStore) Summarize(ctx context.Context, q store.Querier, sc store.Scope, since time.Time) ([]SummaryGroup, error) {
	since = since.UTC()
	kept := time.Unix(hourOf(since), 0).UTC() // the first hour the counts give
	if kept.Before(since) {
		kept = kept.Add(time.Hour)
	}
	scan := func(s store.Scanner) (SummaryGroup, error) {
		var g SummaryGroup
		return g, s.Scan(&g.Currency, &g.Status, &g.Count, &g.Captured)
	}
	k := sc.ReadableCounted("tenant_id", "organization_id").And("created_hour >= ?", kept.Unix())
	groups, err := store.Many(ctx, q, scan, `SELECT currency_code, status, CAST(SUM(n) AS BIGINT), CAST(SUM(captured) AS BIGINT)
		FROM payment_summary_hours WHERE `+k.SQL()+` GROUP BY currency_code, status HAVING SUM(n) > 0`, k.Values()...)
	if err != nil || !since.Before(kept) {
		return groups, err
	}
	c := sc.Readable("tenant_id", "organization_id").And("created_at >= ?", since).And("created_at < ?", kept)
	first, err := store.Many(ctx, q, scan, `SELECT currency_code, status, COUNT(*), CAST(SUM(captured_amount) AS BIGINT)
		FROM payment_transactions WHERE `+c.SQL()+` GROUP BY currency_code, status`, c.Values()...)
	for _, f := range first {
		i := slices.IndexFunc(groups, func(g SummaryGroup) bool { return g.Currency == f.Currency && g.Status == f.Status })
		if i < 0 {
			groups = append(groups, f)
			continue
		}
		groups[i].Count += f.Count
		groups[i].Captured += f.Captured
	}
	return groups, err
}

// hourOf is the start of the hour t is in, in Unix seconds: the
// created_hour of the summary counts of a transaction created at t
// (migration 0003's triggers compute the same from created_at).
func hourOf(t time.Time) int64 {
	s := t.Unix()
	return s - ((s%3600)+3600)%3600
}

const refundColumns = "r.id, r.tenant_id, r.transaction_id, r.provider_refund_id, r.amount, t.currency_code, r.reason, " +
	"r.gateway_status, r.created_at"

func scanRefund(s store.Scanner) (*Refund, error) {
	var r Refund
	return &r, s.Scan(&r.ID, &r.TenantID, &r.TransactionID, &r.ProviderRefundID, &r.Amount, &r.Currency, &r.Reason,
		&r.GatewayStatus, &r.CreatedAt)
}

// InsertRefund implements Store.
func (*SQLStore) InsertRefund(ctx context.Context, q store.Querier, r *Refund) error {
	_, err := q.Exec(ctx, `INSERT INTO payment_refunds (id, tenant_id, transaction_id, provider_refund_id, amount,
		reason, gateway_status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		r.ID, r.TenantID, r.TransactionID, r.ProviderRefundID, r.Amount, r.Reason, r.GatewayStatus, r.CreatedAt)
	return err
}

// ListRefunds implements Store.
func (*SQLStore) ListRefunds(ctx context.Context, q store.Querier, tenantID, transactionID string) ([]*Refund, error) {
	return store.Many(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM payment_refunds r
		JOIN payment_transactions t ON t.id = r.transaction_id
		WHERE r.tenant_id = $1 AND r.transaction_id = $2 ORDER BY r.created_at, r.id`, tenantID, transactionID)
}

// GetOperation implements Store.
func (*SQLStore) GetOperation(ctx context.Context, q store.Querier, tenantID, transactionID, operationID string) (*Operation, error) {
	return store.One(ctx, q, func(s store.Scanner) (*Operation, error) {
		var op Operation
		var response []byte
		if err := s.Scan(&op.TenantID, &op.TransactionID, &op.OperationID, &op.Action, &response, &op.CreatedAt); err != nil {
			return nil, err
		}
		op.Response = response
		return &op, nil
	}, `SELECT tenant_id, transaction_id, operation_id, action, response, created_at FROM payment_operations
		WHERE tenant_id = $1 AND transaction_id = $2 AND operation_id = $3`, tenantID, transactionID, operationID)
}

// InsertOperation implements Store.
func (*SQLStore) InsertOperation(ctx context.Context, q store.Querier, op *Operation) error {
	_, err := q.Exec(ctx, `INSERT INTO payment_operations (tenant_id, transaction_id, operation_id, action, response,
		created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		op.TenantID, op.TransactionID, op.OperationID, string(op.Action), string(op.Response), op.CreatedAt)
	return err
}

const webhookColumns = "id, tenant_id, transaction_id, provider_key, idempotency_key, event_type, event_id, " +
	"provider_status, amount, mapped_status, outcome, status_before, status_after, received_at, processed_at"

func scanWebhook(s store.Scanner) (*Webhook, error) {
	var w Webhook
	return &w, s.Scan(&w.ID, &w.TenantID, &w.TransactionID, &w.ProviderKey, &w.IdempotencyKey, &w.EventType, &w.EventID,
		&w.ProviderStatus, &w.Amount, &w.MappedStatus, &w.Outcome, &w.StatusBefore, &w.StatusAfter, &w.ReceivedAt,
		&w.ProcessedAt)
}

// InsertWebhook implements Store.
func (*SQLStore) InsertWebhook(ctx context.Context, q store.Querier, w *Webhook) (bool, error) {
	n, err := q.Exec(ctx, insertWebhookSQL,
		w.ID, w.TenantID, w.TransactionID, w.ProviderKey, w.IdempotencyKey, w.EventType, w.EventID, w.ProviderStatus,
		w.Amount, string(w.MappedStatus), w.ReceivedAt)
	return n == 1, err
}

// GetWebhook implements Store.
func (*SQLStore) GetWebhook(ctx context.Context, q store.Querier, tenantID, id string) (*Webhook, error) {
	return store.One(ctx, q, scanWebhook, `SELECT `+webhookColumns+` FROM payment_webhooks
		WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

// FinishWebhook implements Store.
func (*SQLStore) FinishWebhook(ctx context.Context, q store.Querier, w *Webhook) error {
	return store.ExecOne(ctx, q, `UPDATE payment_webhooks SET mapped_status = $3, outcome = $4, status_before = $5,
		status_after = $6, processed_at = $7 WHERE tenant_id = $1 AND id = $2`,
		w.TenantID, w.ID, string(w.MappedStatus), w.Outcome, string(w.StatusBefore), string(w.StatusAfter), w.ProcessedAt)
}

// ListWebhooks implements Store.
func (*SQLStore) ListWebhooks(ctx context.Context, q store.Querier, tenantID, transactionID string) ([]*Webhook, error) {
	return store.Many(ctx, q, scanWebhook, `SELECT `+webhookColumns+` FROM payment_webhooks
		WHERE tenant_id = $1 AND transaction_id = $2 ORDER BY received_at, id`, tenantID, transactionID)
}
