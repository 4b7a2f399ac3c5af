package multiproc_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/internal/testing/multiproc"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
)

// tries is how many times each area's change-then-use is tried.
const tries = 100

// readBound is how long a read through one server may lag a change
// committed through the other: PostgreSQL notifies within milliseconds.
// It bounds the 95th percentile; the worst case is bounded by the poll
// (pollBound), as the notification's own delivery takes tens of
// milliseconds now and then on a loaded machine (measured: the listener
// receiving it up to 85 ms after the change's response, at load average
// 7 on two cores).
const (
	readBound = 50 * time.Millisecond
	pollBound = 250 * time.Millisecond
)

// TestAcrossServers runs two servers (two Kits, each on its own database
// handle: two processes, in effect) on one PostgreSQL schema, served over
// HTTP, and for every area with cached configuration changes it through
// server A and uses it at once through server B: the write through B
// must honour the change every time (0 stale in 100 tries per area), and
// reads through B converge within 50 ms. Rate limits over one Redis are
// shared by the two. Skipped without PostgreSQL (and the rate limits
// without Redis).
func TestAcrossServers(t *testing.T) {
	// Files in the database: a file uploaded through A is delivered by B.
	c := multiproc.Start(t, multiproc.Options{Config: full.Config{FilesInDatabase: true}})
	a, b := c.Servers[0], c.Servers[1]
	t.Run("entities", func(t *testing.T) { entitiesAcross(t, c, a, b) })
	t.Run("rules", func(t *testing.T) { rulesAcross(t, c, a, b) })
	t.Run("toggles", func(t *testing.T) { togglesAcross(t, c, a, b) })
	t.Run("payment credentials", func(t *testing.T) { paymentCredentialsAcross(t, c, a, b) })
	t.Run("attachments", func(t *testing.T) { attachmentsAcross(t, c, a, b) })
	t.Run("ratelimit", func(t *testing.T) { rateLimitsAcross(t, c) })
}

// staleCount counts stale outcomes and keeps the first few for the
// failure message.
type staleCount struct {
	n    int
	seen []string
	of   int // the number of tries; 0 is tries
}

func (s *staleCount) add(format string, args ...any) {
	s.n++
	if len(s.seen) < 5 {
		s.seen = append(s.seen, fmt.Sprintf(format, args...))
	}
}

func (s *staleCount) check(t *testing.T, what string) {
	t.Helper()
	of := cmp.Or(s.of, tries)
	t.Logf("%s: %d stale of %d", what, s.n, of)
	if s.n != 0 {
		t.Errorf("%s: %d stale of %d; first: %s", what, s.n, of, strings.Join(s.seen, "; "))
	}
}

func checkReads(t *testing.T, what string, lags []time.Duration, firstStale int) {
	t.Helper()
	st := multiproc.Summarize(lags)
	t.Logf("%s: read convergence %v (first read stale in %d of %d)", what, st, firstStale, st.N)
	if st.P95 > readBound || st.Max >= pollBound {
		t.Errorf("%s: reads converged in p95 %v (want ≤ %v), max %v (want < %v: notified, not polled)",
			what, st.P95, readBound, st.Max, pollBound)
	}
}

var entityFeatures = []string{"entities.records.view", "entities.records.manage", "entities.definitions.view", "entities.definitions.manage"}

// A field defined through A is accepted by the next record write through
// B; deleted through A, it is refused by the next write through B. The
// definitions B reads converge.
func entitiesAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Entities "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, entityFeatures...)
	eid := "mp.e_" + multiproc.RandomHex(4)
	define := func(field string) {
		a.Do(t, "POST", "/api/entities/definitions", key, map[string]any{"entityId": eid, "key": field, "kind": "text"}).Expect(t, 200)
	}
	write := func(field string) *multiproc.Response {
		return b.Do(t, "POST", "/api/entities/records", key, map[string]any{"entityId": eid, "values": map[string]any{field: "v"}})
	}
	var refused, accepted staleCount
	start := time.Now()
	for i := range tries {
		field := fmt.Sprintf("f%d", i)
		define(field)
		if r := write(field); r.Status != 200 {
			refused.add("%s: %d %s", field, r.Status, r.Body)
		}
		a.Do(t, "DELETE", "/api/entities/definitions", key, map[string]any{"entityId": eid, "key": field}).Expect(t, 200)
		if r := write(field); r.Status != 400 || !bytes.Contains(r.Body, []byte("Unknown custom field")) {
			accepted.add("%s: %d %s", field, r.Status, r.Body)
		}
	}
	t.Logf("entities: %d tries in %v", tries, time.Since(start).Round(time.Millisecond))
	refused.check(t, "entities: a field defined through A refused by B's next write")
	accepted.check(t, "entities: a field deleted through A accepted by B's next write")

	// Reads: the definitions B lists.
	lags, firstStale := make([]time.Duration, 0, tries), 0
	listed := func(field string) bool {
		body := b.Do(t, "GET", "/api/entities/definitions?entityId="+eid, key, nil).Expect(t, 200).JSON(t)
		for _, it := range body["items"].([]any) {
			if it.(map[string]any)["key"] == field {
				return true
			}
		}
		return false
	}
	eid = "mp.r_" + multiproc.RandomHex(4) // a list of its own, short
	for i := range tries {
		field := fmt.Sprintf("g%d", i)
		define(field)
		t0 := time.Now()
		if !listed(field) {
			firstStale++
		}
		lags = append(lags, multiproc.Converge(t, t0, 5*time.Second, func() bool { return listed(field) }))
	}
	checkReads(t, "entities definitions", lags, firstStale)
}

var ruleFeatures = []string{"business_rules.rules.view", "business_rules.rules.create", "business_rules.rules.edit",
	"business_rules.rules.delete", "business_rules.rules.execute", "business_rules.logs.view"}

// A rule whose condition is changed through A runs as changed in the next
// execution through B (of its set, and of its entity type's rules); a set
// disabled through A is refused by the next execution through B, enabled
// again it runs. Executions are not dry runs (they log and take effect).
func rulesAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Rules "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, ruleFeatures...)
	entityType := "order_" + multiproc.RandomHex(3)
	rule := func(op string) map[string]any {
		return map[string]any{
			"ruleId": "R1", "ruleName": "Rule R1", "ruleType": "GUARD", "entityType": entityType, "eventType": "beforeCreate",
			"conditionExpression": map[string]any{"field": "total", "operator": op, "value": 100},
			"successActions":      []any{map[string]any{"type": "ALLOW_TRANSITION", "config": map[string]any{"message": "ok"}}},
			"failureActions":      []any{map[string]any{"type": "BLOCK_TRANSITION", "config": map[string]any{"message": "too small"}}},
			"enabled":             true, "priority": 100, "version": 1,
		}
	}
	id := a.Do(t, "POST", "/api/business_rules/rules", key, rule(">")).Expect(t, 201).JSON(t)["id"].(string)
	a.Do(t, "POST", "/api/business_rules/sets", key, map[string]any{"id": "FLOW", "name": "Flow"}).Expect(t, 201)
	a.Do(t, "POST", "/api/business_rules/sets/FLOW/members", key, map[string]any{"ruleId": "R1", "sequence": 10}).Expect(t, 201)
	input := func(i int) map[string]any {
		return map[string]any{"entityType": entityType, "entityId": fmt.Sprintf("o-%d", i), "eventType": "beforeCreate",
			"data": map[string]any{"total": 150}, "dryRun": false}
	}
	// held reports R1's condition result in an execution's response.
	held := func(r *multiproc.Response) (bool, bool) {
		if r.Status != 200 {
			return false, false
		}
		for _, e := range r.JSON(t)["executedRules"].([]any) {
			if e := e.(map[string]any); e["ruleId"] == "R1" {
				v, ok := e["conditionResult"].(bool)
				return v, ok
			}
		}
		return false, false
	}
	for _, path := range []string{"/api/business_rules/sets/FLOW/execute", "/api/business_rules/execute"} {
		var stale staleCount
		b.Do(t, "POST", path, key, input(0)).Expect(t, 200) // B caches the plan
		start := time.Now()
		for i := range tries {
			op := ">" // 150 > 100 holds
			if i%2 == 0 {
				op = "<=" // does not
			}
			body := rule(op)
			body["id"] = id
			a.Do(t, "PUT", "/api/business_rules/rules", key, body).Expect(t, 200)
			r := b.Do(t, "POST", path, key, input(i))
			if got, ok := held(r); !ok || got != (op == ">") {
				stale.add("try %d (%s): %d %s", i, op, r.Status, r.Body)
			}
		}
		t.Logf("rules %s: %d tries in %v", path, tries, time.Since(start).Round(time.Millisecond))
		stale.check(t, "rules: a rule changed through A ran unchanged by B's next execution ("+path+")")
	}

	var stale staleCount
	for i := range tries {
		enabled := i%2 == 1
		a.Do(t, "PATCH", "/api/business_rules/sets/FLOW", key, map[string]any{"enabled": enabled}).Expect(t, 200)
		r := b.Do(t, "POST", "/api/business_rules/sets/FLOW/execute", key, input(i))
		switch {
		case enabled && r.Status != 200:
			stale.add("try %d: enabled, %d %s", i, r.Status, r.Body)
		case !enabled && (r.Status != 409 || !bytes.Contains(r.Body, []byte("SET_DISABLED"))):
			stale.add("try %d: disabled, %d %s", i, r.Status, r.Body)
		}
	}
	stale.check(t, "rules: a set disabled or enabled through A executed as before by B's next execution")
}

// A payment provider's credentials changed through A are what B uses for
// its next provider call: B verifies a webhook signed with the secret
// just set through A (with the secret before it cached from the previous
// try), and refuses one signed with that previous secret. B serves the
// credentials from its cache without reading their version while its
// lease holds; A's change returns once B has acknowledged it.
func paymentCredentialsAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Payment credentials "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, "payment_gateways.*", "integrations.*")
	setSecret := func(secret string) {
		a.Do(t, "PUT", "/api/integrations/gateway_mock/credentials", key,
			map[string]any{"credentials": map[string]any{"webhookSecret": secret}}).Expect(t, 200)
	}
	webhook := func(sid, secret string) *multiproc.Response {
		body, _ := json.Marshal(map[string]any{"id": "evt_" + multiproc.RandomHex(8), "type": "payment.authorized",
			"data": map[string]any{"id": sid, "status": "authorized"}})
		return b.DoWith(t, "POST", "/api/payment_gateways/webhook/mock_processing", "", body,
			http.Header{payments.MockSignatureHeader: {payments.MockSignature(body, secret)}})
	}
	prev := "whsec_" + multiproc.RandomHex(8)
	setSecret(prev)
	sid := b.Do(t, "POST", "/api/payment_gateways/sessions", key, map[string]any{"providerKey": "mock_processing",
		"amount": 10, "currencyCode": "USD"}).Expect(t, 201).JSON(t)["sessionId"].(string)
	webhook(sid, prev).Expect(t, 202) // B caches the secret
	var refused, accepted staleCount
	for i := range tries {
		secret := fmt.Sprintf("whsec_%d_%s", i, multiproc.RandomHex(4))
		setSecret(secret)
		if r := webhook(sid, secret); r.Status != 202 {
			refused.add("try %d: %d %s", i, r.Status, r.Body)
		}
		if r := webhook(sid, prev); r.Status != 401 {
			accepted.add("try %d: %d %s", i, r.Status, r.Body)
		}
		prev = secret
	}
	refused.check(t, "payment credentials: a webhook signed with the secret set through A refused by B")
	accepted.check(t, "payment credentials: a webhook signed with the secret replaced through A accepted by B")
}

// A toggle changed through A: B's checks converge within milliseconds
// (reads may lag), and in-process, a check after Toggles.Sync (what a host
// gating a write on a toggle does) sees it at once.
func togglesAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Toggles "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn) // checks need authentication only
	ident := "mp.t_" + multiproc.RandomHex(4)
	id := a.Do(t, "POST", "/api/feature_toggles/global", c.SuperKey,
		map[string]any{"identifier": ident, "name": "MP", "type": "boolean", "defaultValue": false}).Expect(t, 201).JSON(t)["id"].(string)
	set := func(on bool) {
		a.Do(t, "PUT", "/api/feature_toggles/global", c.SuperKey, map[string]any{"id": id, "defaultValue": on}).Expect(t, 200)
	}
	check := func() bool {
		return b.Do(t, "GET", "/api/feature_toggles/check/boolean?identifier="+multiproc.Query(ident), key, nil).
			Expect(t, 200).JSON(t)["enabled"] == true
	}
	lags, firstStale := make([]time.Duration, 0, tries), 0
	for i := range tries {
		want := i%2 == 0
		set(want)
		t0 := time.Now()
		if check() != want {
			firstStale++
		}
		lags = append(lags, multiproc.Converge(t, t0, 5*time.Second, func() bool { return check() == want }))
	}
	checkReads(t, "toggles checks", lags, firstStale)

	ctx := store.WithScope(t.Context(), store.Scope{TenantID: tn.ID})
	var stale staleCount
	for i := range tries {
		want := i%2 == 1
		set(want)
		if err := b.Kit.Toggles.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Kit.Toggles.Bool(ctx, ident); err != nil || got != want {
			stale.add("try %d: %v, %v", i, got, err)
		}
	}
	stale.check(t, "toggles: a check after Sync in B missed a change through A")
}

var attachmentFeatures = []string{"attachments.view", "attachments.manage", "entities.definitions.manage"}

// An attachment custom field defined through A is accepted by the next
// change of an attachment through B, and refused once deleted through A.
// A partition made private through A stops B's anonymous deliveries
// within milliseconds (a read), and public again restarts them.
func attachmentsAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Attachments "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, attachmentFeatures...)
	part := a.Do(t, "POST", "/api/attachments/partitions", key, map[string]any{"code": "mp_pub", "title": "MP public", "isPublic": true}).
		Expect(t, 201).JSON(t)["item"].(map[string]any)
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range map[string]string{"entityId": "mp.doc", "recordId": "r1", "partitionCode": "mp_pub"} {
		_ = w.WriteField(k, v)
	}
	fw, _ := w.CreateFormFile("file", "note.txt")
	_, _ = fw.Write([]byte("hello"))
	_ = w.Close()
	att := a.DoWith(t, "POST", "/api/attachments", key, body.Bytes(), http.Header{"Content-Type": {w.FormDataContentType()}}).
		Expect(t, 200).JSON(t)["item"].(map[string]any)["id"].(string)

	patch := func(field string) *multiproc.Response {
		return b.Do(t, "PATCH", "/api/attachments/library/"+att, key, map[string]any{"customFields": map[string]any{field: "v"}})
	}
	var refused, accepted staleCount
	for i := range tries {
		field := fmt.Sprintf("f%d", i)
		a.Do(t, "POST", "/api/entities/definitions", key,
			map[string]any{"entityId": attachments.CustomFieldsEntity, "key": field, "kind": "text"}).Expect(t, 200)
		if r := patch(field); r.Status != 200 {
			refused.add("%s: %d %s", field, r.Status, r.Body)
		}
		a.Do(t, "DELETE", "/api/entities/definitions", key, map[string]any{"entityId": attachments.CustomFieldsEntity, "key": field}).Expect(t, 200)
		if r := patch(field); r.Status != 400 {
			accepted.add("%s: %d %s", field, r.Status, r.Body)
		}
	}
	refused.check(t, "attachments: a custom field defined through A refused by B's next change")
	accepted.check(t, "attachments: a custom field deleted through A accepted by B's next change")

	deliver := func() int { return b.Do(t, "GET", "/api/attachments/file/"+att, "", nil).Status }
	lags, firstStale := make([]time.Duration, 0, tries), 0
	for i := range tries {
		public := i%2 == 1
		a.Do(t, "PUT", "/api/attachments/partitions", key,
			map[string]any{"id": part["id"], "code": "mp_pub", "title": "MP public", "isPublic": public}).Expect(t, 200)
		want := 401
		if public {
			want = 200
		}
		t0 := time.Now()
		if deliver() != want {
			firstStale++
		}
		lags = append(lags, multiproc.Converge(t, t0, 5*time.Second, func() bool { return deliver() == want }))
	}
	checkReads(t, "attachments anonymous delivery", lags, firstStale)
}

// Over one Redis, the two servers share rate-limit counts: the sign-in
// limit (5 per account and address per minute) and a per-tenant route
// limit (rule-set reads, 100 per tenant per minute) are exhausted by
// requests through A and B together. In memory each counts alone.
func rateLimitsAcross(t *testing.T, c *multiproc.Cluster) {
	url := multiproc.RedisURL(t)
	cfg := ratelimit.DefaultConfig()
	cfg.KeyPrefix = "rl-mp-" + multiproc.RandomHex(6) // no leftovers from other runs
	redis := c.Front(t, func(t testing.TB, _ int) *ratelimit.Policy { return multiproc.RedisPolicy(t, url, cfg) })
	memory := c.Front(t, func(testing.TB, int) *ratelimit.Policy { return ratelimit.NewPolicy(cfg, nil, nil) })

	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	login := func(s *multiproc.Server, email string) int {
		return s.DoWith(t, "POST", "/api/login", "", "email="+multiproc.Query(email)+"&password=wrong", form).Status
	}
	// Sign-in: five wrong attempts, alternating servers, then both refuse.
	email := "mp-" + multiproc.RandomHex(3) + "@acme.test"
	for i := range 5 {
		if st := login(redis[i%2], email); st != 401 {
			t.Fatalf("attempt %d through %s: %d, want 401", i+1, redis[i%2].Name, st)
		}
	}
	for _, s := range redis {
		if st := login(s, email); st != 429 {
			t.Errorf("sixth attempt through %s (Redis): %d, want 429", s.Name, st)
		}
	}
	// In memory: three attempts each, and neither has counted five.
	email = "mp-" + multiproc.RandomHex(3) + "@acme.test"
	memoryLimited := 0
	for i := range 6 {
		if login(memory[i%2], email) == 429 {
			memoryLimited++
		}
	}
	t.Logf("sign-in limit (5/min): through Redis the 6th attempt is refused by both servers; in memory %d of 6 attempts refused", memoryLimited)

	// A per-tenant route limit: 50 reads through each, then both refuse.
	tn := c.NewTenant(t, "Limits "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn)
	for i := range 100 {
		s := redis[i%2]
		if r := s.Do(t, "GET", "/api/business_rules/sets", key, nil); r.Status != 200 {
			t.Fatalf("read %d through %s: %d %s", i+1, s.Name, r.Status, r.Body)
		}
	}
	for _, s := range redis {
		if r := s.Do(t, "GET", "/api/business_rules/sets", key, nil); r.Status != 429 {
			t.Errorf("101st rule-set read through %s: %d, want 429", s.Name, r.Status)
		}
	}
	t.Logf("rule-set reads (100/tenant/min): 50 through A and 50 through B, the 101st refused by both (Redis)")
}
