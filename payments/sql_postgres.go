//go:build !tenantkit_nopostgres

package payments

import (
	"context"
	"slices"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

func init() {
	transactionWriters[store.PostgresDialect] = insertTransactionsPostgres
	transactionStatements = append(transactionStatements, insertTransactionsPostgresSQL)
}

// insertTransactionsPostgresSQL inserts transactions and adds them to
// their counts in one statement: the transactions' columns as arrays,
// unnested and inserted by a data-modifying WITH, and the counts' as
// arrays too, upserted in key order (ORDER BY the ordinality: the keys
// come sorted, the one lock order of every writer). One round trip and
// one statement text, whatever the number of transactions.
const insertTransactionsPostgresSQL = `WITH t AS (
		INSERT INTO payment_transactions (id, tenant_id, organization_id, payment_id, provider_key, session_id, status,
			gateway_status, amount, captured_amount, refunded_amount, currency_code, capture_method, description, metadata,
			redirect_url, provider_data, created_at, updated_at)
		SELECT v.id, v.tenant_id, NULLIF(v.organization_id, ''), v.payment_id, v.provider_key, v.session_id, v.status,
			v.gateway_status, v.amount, v.captured_amount, v.refunded_amount, v.currency_code, v.capture_method, v.description,
			v.metadata::jsonb, v.redirect_url, v.provider_data::jsonb, v.created_at, v.updated_at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::bigint[], $10::bigint[], $11::bigint[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[],
			$17::text[], $18::timestamptz[], $25::timestamptz[])
			AS v (id, tenant_id, organization_id, payment_id, provider_key, session_id, status, gateway_status, amount,
				captured_amount, refunded_amount, currency_code, capture_method, description, metadata, redirect_url,
				provider_data, created_at, updated_at))
	INSERT INTO payment_transaction_counts AS k (tenant_id, organization_id, status, provider_key, slot, n)
	SELECT c.tenant_id, c.organization_id, c.status, c.provider_key, $19, c.n
	FROM unnest($20::text[], $21::text[], $22::text[], $23::text[], $24::bigint[])
		WITH ORDINALITY AS c (tenant_id, organization_id, status, provider_key, n, i)
	ORDER BY c.i
	ON CONFLICT (tenant_id, organization_id, status, provider_key, slot) DO UPDATE SET n = k.n + excluded.n`

// insertTransactionsPostgres is SQLStore.InsertTransactions on
// PostgreSQL (insertTransactionsPostgresSQL).
func insertTransactionsPostgres(ctx context.Context, q store.Querier, ts []*Transaction) error {
	n := len(ts)
	ids, tenants, orgs, paymentIDs, providers := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	sessions, statuses, gateway := make([]string, n), make([]string, n), make([]string, n)
	amounts, captured, refunded := make([]int64, n), make([]int64, n), make([]int64, n)
	currencies, captures, descriptions, redirects := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	metadata, providerData := make([]string, n), make([]*string, n)
	created, updated := make([]time.Time, n), make([]time.Time, n)
	type countKey struct{ tenant, org, status, provider string }
	added := map[countKey]int64{}
	for i, t := range ts {
		meta := t.Metadata
		if meta == nil {
			meta = map[string]any{}
		}
		m, err := jsonText(meta)
		if err != nil {
			return err
		}
		d, err := jsonText(t.ProviderData)
		if err != nil {
			return err
		}
		metadata[i] = m.(string)
		if d != nil {
			s := d.(string)
			providerData[i] = &s
		}
		ids[i], tenants[i], orgs[i], paymentIDs[i], providers[i] = t.ID, t.TenantID, t.OrganizationID, t.PaymentID, t.ProviderKey
		sessions[i], statuses[i], gateway[i] = t.SessionID, string(t.Status), t.GatewayStatus
		amounts[i], captured[i], refunded[i] = t.Amount, t.CapturedAmount, t.RefundedAmount
		currencies[i], captures[i], descriptions[i], redirects[i] = t.Currency, t.CaptureMethod, t.Description, t.RedirectURL
		created[i], updated[i] = t.CreatedAt, t.UpdatedAt
		added[countKey{t.TenantID, t.OrganizationID, string(t.Status), t.ProviderKey}]++
	}
	keys := make([]countKey, 0, len(added))
	for k := range added {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b countKey) int {
		return slices.Compare([]string{a.tenant, a.org, a.status, a.provider}, []string{b.tenant, b.org, b.status, b.provider})
	})
	m := len(keys)
	cTenants, cOrgs, cStatuses, cProviders, cN := make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]int64, m)
	for i, k := range keys {
		cTenants[i], cOrgs[i], cStatuses[i], cProviders[i], cN[i] = k.tenant, k.org, k.status, k.provider, added[k]
	}
	_, err := q.Exec(ctx, insertTransactionsPostgresSQL, ids, tenants, orgs, paymentIDs, providers, sessions, statuses, gateway,
		amounts, captured, refunded, currencies, captures, descriptions, metadata, redirects, providerData, created,
		transactionCounts.Slot(q), cTenants, cOrgs, cStatuses, cProviders, cN, updated)
	return err
}
