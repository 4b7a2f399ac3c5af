package payments_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// relSize is the reliability run's size.
type relSize struct {
	transactions int // payments, in two tenants
	webhooks     int // distinct webhooks, each sent 1–3 times
	forged       int // webhooks signed with the other tenant's secret
	actions      int // manual actions at most
}

var (
	relFull  = relSize{transactions: 500, webhooks: 10_000, forged: 200, actions: 4_000}
	relShort = relSize{transactions: 100, webhooks: 1_000, forged: 50, actions: 500}
)

const (
	relSenders = 8 // goroutines calling Receive
	relActors  = 4 // goroutines calling Capture and Refund
)

// providerCalls records the mock providers' captures and refunds, by
// session.
type providerCalls struct {
	mu       sync.Mutex
	captures map[string][]payments.CaptureInput
	refunds  map[string][]string // refund ids
}

// recordingMock is a mock provider that records its captures and refunds.
type recordingMock struct {
	*payments.Mock
	calls *providerCalls
}

func (m recordingMock) Capture(ctx context.Context, in payments.CaptureInput) (*payments.CaptureResult, error) {
	res, err := m.Mock.Capture(ctx, in)
	if err == nil {
		m.calls.mu.Lock()
		in.Credentials = nil
		m.calls.captures[in.SessionID] = append(m.calls.captures[in.SessionID], in)
		m.calls.mu.Unlock()
	}
	return res, err
}

func (m recordingMock) Refund(ctx context.Context, in payments.RefundInput) (*payments.RefundResult, error) {
	res, err := m.Mock.Refund(ctx, in)
	if err == nil {
		m.calls.mu.Lock()
		m.calls.refunds[in.SessionID] = append(m.calls.refunds[in.SessionID], res.RefundID)
		m.calls.mu.Unlock()
	}
	return res, err
}

// relWebhook is one webhook of the run.
type relWebhook struct {
	id     string
	tx     int // index of its payment
	status payments.Status
	amount *int64
	copies int
	// forged webhooks are signed with the other tenant's secret.
	forged bool
	// accepted counts the Receive calls that stored it (not duplicates).
	accepted atomic.Int32
}

// relAction is a successful manual action.
type relAction struct {
	action      payments.Action
	operationID string
	replay      bool
	status      payments.Status
	refundID    string
	amount      int64 // a refund's amount
	answer      string
}

// relPayment is one payment of the run.
type relPayment struct {
	tn      tenant
	id      string
	session string
	amount  int64
	initial payments.Status

	mu      sync.Mutex
	actions []relAction
}

// Webhooks and manual actions on the same payments, at once, on both
// engines, through a Kit whose job engine applies the webhooks: 500
// payments of two tenants, 10,000 mock webhooks (authorized, captured,
// refunded, cancelled, failed; some refunds with an amount) each sent 1–3
// times in shuffled order by several goroutines through either mock route,
// 200 more signed with the wrong tenant's secret, while other goroutines
// capture and refund (in full and in part, with and without operationIds,
// and replaying operationIds). Afterwards every webhook is processed, and
// for every payment: each idempotency key is in its history exactly once;
// the history and the manual actions replay as one chain of allowed moves
// ending in the payment's status, which is also the chain its events
// tell; the amounts hold (captured ≤ amount, refunded ≤ captured, refunds
// add up to the refunded amount); no capture was sent to the provider
// twice or for more than the payment; no forged webhook moved anything.
//
// With -short it runs 1,000 webhooks on 100 payments.
func TestWebhookReliability(t *testing.T) {
	size := relFull
	if testing.Short() {
		size = relShort
	}
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		opts := &store.Options{Logger: quiet()}
		if strings.HasPrefix(url, "postgres") {
			// pgx's default pool (4 connections on this machine) is less
			// than the Kit's writers alone want at once: group commits,
			// 4 webhook workers, River's fetches and completions, the
			// actions. With it this run takes about three times as long.
			opts.MaxReaders = 16
		}
		db, err := store.Open(t.Context(), url, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		start := time.Now()
		runReliability(t, db, size)
		t.Logf("%s: %v in all", db.Dialect().Name(), time.Since(start).Round(time.Millisecond))
	})
}

func runReliability(t *testing.T, db *store.DB, size relSize) {
	ctx := t.Context()
	calls := &providerCalls{captures: map[string][]payments.CaptureInput{}, refunds: map[string][]string{}}
	registry := payments.NewRegistry(recordingMock{payments.NewMock(payments.KeyMock), calls},
		recordingMock{payments.NewMock(payments.KeyMockProcessing), calls})
	kit, err := full.OpenPlain(ctx, full.Config{DB: db, Logger: quiet(),
		Payments: payments.Options{Providers: registry, Credentials: tenantSecrets}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := kit.Close(stop); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := kit.Start(ctx); err != nil {
		t.Fatal(err)
	}
	svc := kit.Payments
	seed := uint64(time.Now().UnixNano())
	t.Logf("%s: seed %d", db.Dialect().Name(), seed)
	rng := rand.New(rand.NewPCG(seed, 16))
	tenants := []tenant{newTenant(t), newTenant(t)}
	phase := time.Now()
	lap := func(what string) {
		t.Logf("%s: %s %v", db.Dialect().Name(), what, time.Since(phase).Round(time.Millisecond))
		phase = time.Now()
	}

	// The payments: mock_processing (pending) and mock manual
	// (authorized), 50.00 to 150.00 USD, opened concurrently.
	pays := make([]*relPayment, size.transactions)
	for i := range pays {
		pays[i] = &relPayment{tn: tenants[i%2], amount: 5000 + rng.Int64N(10001), initial: payments.StatusPending}
		if i%10 < 3 {
			pays[i].initial = payments.StatusAuthorized
		}
	}
	parallel(t, 8, len(pays), func(i int) error {
		p := pays[i]
		provider, method := payments.KeyMockProcessing, ""
		if p.initial == payments.StatusAuthorized {
			provider, method = payments.KeyMock, payments.CaptureManual
		}
		s, err := svc.CreateSession(p.tn.ctx, payments.SessionRequest{ProviderKey: provider,
			Amount: payments.FormatAmount(p.amount, "USD"), CurrencyCode: "USD", CaptureMethod: method})
		if err != nil {
			return err
		}
		if s.Status != p.initial {
			return fmt.Errorf("a new %s session is %s", provider, s.Status)
		}
		p.id, p.session = s.TransactionID, s.SessionID
		return nil
	})
	lap(fmt.Sprintf("%d sessions", len(pays)))

	// The webhooks and their deliveries, shuffled.
	statuses := []payments.Status{payments.StatusAuthorized, payments.StatusCaptured, payments.StatusRefunded,
		payments.StatusCancelled, payments.StatusFailed}
	hooks := make([]*relWebhook, 0, size.webhooks+size.forged)
	for i := range size.webhooks + size.forged {
		w := &relWebhook{id: fmt.Sprintf("evt_%d_%s", i, store.NewID()), tx: rng.IntN(len(pays)),
			status: statuses[rng.IntN(len(statuses))], copies: 1 + rng.IntN(3), forged: i >= size.webhooks}
		if w.status == payments.StatusRefunded && rng.IntN(3) == 0 || w.status == payments.StatusCaptured && rng.IntN(10) == 0 {
			amount := 1 + rng.Int64N(pays[w.tx].amount)
			w.amount = &amount
		}
		if w.forged {
			w.copies = 1
		}
		hooks = append(hooks, w)
	}
	type delivery struct {
		hook  *relWebhook
		route string
	}
	var deliveries []delivery
	for _, w := range hooks {
		for range w.copies {
			route := payments.KeyMock
			if rng.IntN(2) == 0 {
				route = payments.KeyMockProcessing
			}
			deliveries = append(deliveries, delivery{w, route})
		}
	}
	rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })

	// Senders and actors, at once.
	var unexpected sync.Map // error text → count, of errors no call should give
	fail := func(what string, err error) {
		n, _ := unexpected.LoadOrStore(what+": "+err.Error(), new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	}
	queue := make(chan delivery)
	var senders, actors sync.WaitGroup
	var sendersDone atomic.Bool
	for range relSenders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for d := range queue {
				p := pays[d.hook.tx]
				body := mockEvent(d.hook.id, p.session, d.hook.status, d.hook.amount)
				secret := secretOf(p.tn.id)
				if d.hook.forged {
					secret = secretOf(tenants[1-slices.Index(tenants, p.tn)].id)
				}
				duplicate, err := svc.Receive(context.WithoutCancel(ctx), d.route, signed(body, secret), body)
				switch {
				case d.hook.forged:
					if !errors.Is(err, payments.ErrVerification) {
						fail("a forged webhook", fmt.Errorf("answered %v", err))
					}
				case err != nil:
					fail("Receive", err)
				case !duplicate:
					d.hook.accepted.Add(1)
				}
			}
		}()
	}
	var actionCount atomic.Int64
	for a := range relActors {
		actors.Add(1)
		go func() {
			defer actors.Done()
			arng := rand.New(rand.NewPCG(uint64(a), uint64(time.Now().UnixNano())))
			// Paced, so that the webhooks get their share: most actions
			// are refused at once, and unpaced they would take the CPU.
			for !sendersDone.Load() && actionCount.Add(1) <= int64(size.actions) {
				act(svc, pays[arng.IntN(len(pays))], arng, fail)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	for _, d := range deliveries {
		queue <- d
	}
	close(queue)
	senders.Wait()
	sendersDone.Store(true)
	actors.Wait()
	lap(fmt.Sprintf("%d deliveries of %d webhooks (%d forged) received, %d manual actions meanwhile",
		len(deliveries), len(hooks), size.forged, min(actionCount.Load(), int64(size.actions))))

	// Every webhook processed: no history entry without processedAt.
	details := make([]*payments.Detail, len(pays))
	waiting := make([]int, len(pays))
	for i := range waiting {
		waiting[i] = i
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(waiting) > 0 {
		var still []int
		for _, i := range waiting {
			d, err := svc.GetDetail(pays[i].tn.ctx, pays[i].id)
			if err != nil {
				t.Fatalf("GetDetail: %v", err)
			}
			details[i] = d
			if slices.ContainsFunc(d.Webhooks, func(w *payments.Webhook) bool { return w.ProcessedAt == nil }) {
				still = append(still, i)
			}
		}
		waiting = still
		if len(waiting) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d payments still have unprocessed webhooks after 90 s", len(waiting))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	lap("every webhook processed")

	unexpected.Range(func(k, v any) bool {
		t.Errorf("%s (%d times)", k, v.(*atomic.Int32).Load())
		return true
	})

	// Each payment's status events, from the event log.
	events := map[string][][2]payments.Status{} // transaction → (previous, status) of each status event
	for _, tn := range tenants {
		after := ""
		for {
			evs, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: tn.id, AfterID: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				var data struct {
					TransactionID  string          `json:"transactionId"`
					Status         payments.Status `json:"status"`
					PreviousStatus payments.Status `json:"previousStatus"`
				}
				if err := json.Unmarshal(ev.Data, &data); err != nil {
					t.Fatal(err)
				}
				if ev.Type != payments.EventSessionCreated && data.TransactionID != "" {
					events[data.TransactionID] = append(events[data.TransactionID], [2]payments.Status{data.PreviousStatus, data.Status})
				}
			}
			if len(evs) < 1000 {
				break
			}
			after = evs[len(evs)-1].ID
		}
	}

	byPayment := make([][]*relWebhook, len(pays))
	for _, w := range hooks {
		if !w.forged {
			byPayment[w.tx] = append(byPayment[w.tx], w)
		} else if w.accepted.Load() != 0 {
			t.Errorf("forged webhook %s was stored", w.id)
		}
	}
	forged := map[string]bool{}
	for _, w := range hooks {
		if w.forged {
			forged[w.id] = true
		}
	}
	var applied, ignored, manualMoves int
	for i, p := range pays {
		d := details[i]
		nApplied, nIgnored, nManual := checkPayment(t, p, d, byPayment[i], forged, events[p.id], calls)
		applied, ignored, manualMoves = applied+nApplied, ignored+nIgnored, manualMoves+nManual
	}
	finals := map[payments.Status]int{}
	for _, d := range details {
		finals[d.Status]++
	}
	captures, refunds := 0, 0
	for _, c := range calls.captures {
		captures += len(c)
	}
	for _, r := range calls.refunds {
		refunds += len(r)
	}
	lap(fmt.Sprintf("checked: %d webhooks applied, %d ignored, %d moves by manual actions (%d captures and %d refunds at the provider); final statuses %v",
		applied, ignored, manualMoves, captures, refunds, finals))
}

// act runs one random manual action on p and records it when it succeeds:
// a capture of the rest or of a part, a partial refund, with or without
// an operationId, or a replay of an earlier operationId.
func act(svc *payments.Service, p *relPayment, rng *rand.Rand, fail func(string, error)) {
	ctx := p.tn.ctx
	opID := ""
	if rng.IntN(2) == 0 {
		opID = "op_" + store.NewID()
	}
	var replayOf *relAction
	kind := rng.IntN(100)
	if kind >= 85 {
		p.mu.Lock()
		var kept []relAction
		for _, a := range p.actions {
			if a.operationID != "" && !a.replay {
				kept = append(kept, a)
			}
		}
		p.mu.Unlock()
		if len(kept) == 0 {
			return
		}
		replayOf = &kept[rng.IntN(len(kept))]
		opID = replayOf.operationID
	}
	part := func(max int64) json.Number { return payments.FormatAmount(1+rng.Int64N(max), "USD") }
	var rec relAction
	var answer any
	var err error
	switch {
	case replayOf != nil && replayOf.action == payments.ActionCapture || replayOf == nil && kind < 45:
		req := payments.CaptureRequest{TransactionID: p.id, OperationID: opID}
		if replayOf == nil && kind >= 30 {
			req.Amount = part(p.amount / 2)
		}
		var res *payments.CaptureResponse
		if res, err = svc.Capture(ctx, req); err == nil {
			rec, answer = relAction{action: payments.ActionCapture, status: res.Status}, res
		}
	default:
		req := payments.RefundRequest{TransactionID: p.id, OperationID: opID, Amount: part(p.amount / 10)}
		var res *payments.RefundResponse
		if res, err = svc.Refund(ctx, req); err == nil {
			minor, _ := payments.ParseAmount(res.RefundedAmount, "USD")
			rec, answer = relAction{action: payments.ActionRefund, status: res.Status, refundID: res.RefundID, amount: minor}, res
		}
	}
	var conflict *payments.StatusConflictError
	switch {
	case err == nil:
	case replayOf == nil && (errors.As(err, &conflict) || errors.Is(err, store.ErrConflict)):
		return
	default:
		fail(fmt.Sprintf("manual action (replay: %v)", replayOf != nil), err)
		return
	}
	b, _ := json.Marshal(answer)
	rec.operationID, rec.replay, rec.answer = opID, replayOf != nil, string(b)
	if replayOf != nil && rec.answer != replayOf.answer {
		fail("a replay", fmt.Errorf("answered %s, first %s", rec.answer, replayOf.answer))
	}
	p.mu.Lock()
	p.actions = append(p.actions, rec)
	p.mu.Unlock()
}

// statusRank orders the statuses along every allowed move: a payment's
// statuses, sorted by it, are the order it went through them.
var statusRank = map[payments.Status]int{"pending": 0, "authorized": 1, "partially_captured": 2, "captured": 3,
	"partially_refunded": 4, "refunded": 5, "cancelled": 6, "failed": 6, "expired": 6}

// checkPayment checks one payment after the run and returns how many of
// its webhooks were applied and ignored, and how many of its moves manual
// actions made.
func checkPayment(t *testing.T, p *relPayment, d *payments.Detail, sent []*relWebhook, forged map[string]bool,
	events [][2]payments.Status, calls *providerCalls) (applied, ignored, manualMoves int) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("payment %s (%s, %d): %s", p.id, p.initial, p.amount, fmt.Sprintf(format, args...))
	}

	// (a) Each sent webhook is in the history exactly once, stored by
	// exactly one of its deliveries; nothing else is.
	want := map[string]*relWebhook{}
	for _, w := range sent {
		want[w.id] = w
		if n := w.accepted.Load(); n != 1 {
			errorf("webhook %s (sent %d times) was stored by %d deliveries", w.id, w.copies, n)
		}
	}
	seen := map[string]bool{}
	for _, w := range d.Webhooks {
		switch {
		case forged[w.IdempotencyKey]:
			errorf("a forged webhook, %s, is in the history", w.IdempotencyKey)
		case seen[w.IdempotencyKey]:
			errorf("webhook %s is in the history twice", w.IdempotencyKey)
		case want[w.IdempotencyKey] == nil:
			errorf("webhook %s in the history was never sent to it", w.IdempotencyKey)
		}
		seen[w.IdempotencyKey] = true
	}
	for id := range want {
		if !seen[id] {
			errorf("webhook %s is missing from the history", id)
		}
	}

	// (b) Each entry's outcome is Decide's; the applied entries, the
	// manual actions and the events replay as one chain of allowed moves
	// from pending to the payment's status.
	visited := map[payments.Status]string{payments.StatusPending: "the session"}
	if p.initial == payments.StatusAuthorized {
		visited[payments.StatusAuthorized] = "the session"
	}
	type edge struct{ from, to payments.Status }
	webhookEdges := map[edge]int{}
	var ignoredFrom []payments.Status
	for _, w := range d.Webhooks {
		s := want[w.IdempotencyKey]
		if s == nil {
			continue
		}
		mapped := s.status
		if w.MappedStatus != mapped && !(s.status == payments.StatusRefunded && s.amount != nil &&
			w.MappedStatus == payments.StatusPartiallyRefunded) {
			errorf("webhook %s: mapped status %q, sent %q", s.id, w.MappedStatus, s.status)
		}
		if w.ProviderStatus != string(s.status) || w.ProcessedAt == nil {
			errorf("webhook %s: provider status %q, processed %v", s.id, w.ProviderStatus, w.ProcessedAt)
		}
		next, changed := payments.Decide(w.StatusBefore, w.MappedStatus)
		if w.StatusAfter != next {
			errorf("webhook %s: %s → %s on %s, but Decide(%s, %s) is %s", s.id, w.StatusBefore, w.StatusAfter,
				w.MappedStatus, w.StatusBefore, w.MappedStatus, next)
		}
		switch {
		case changed && w.Outcome == payments.OutcomeApplied:
			applied++
			webhookEdges[edge{w.StatusBefore, w.StatusAfter}]++
			visited[w.StatusAfter] = "webhook " + s.id
		case !changed && w.Outcome == payments.OutcomeIgnored:
			ignored++
			ignoredFrom = append(ignoredFrom, w.StatusBefore)
		default:
			errorf("webhook %s: outcome %q, but Decide says changed=%v", s.id, w.Outcome, changed)
		}
	}
	p.mu.Lock()
	actions := slices.Clone(p.actions)
	p.mu.Unlock()
	// manualReached: the statuses a manual action answered that it leads
	// to (a capture answering "cancelled" found the payment cancelled).
	manualReached := map[payments.Status]bool{}
	for _, a := range actions {
		if _, ok := visited[a.status]; !ok {
			visited[a.status] = string(a.action)
		}
		if a.action == payments.ActionCapture && (a.status == payments.StatusCaptured || a.status == payments.StatusPartiallyCaptured) ||
			a.action == payments.ActionRefund && (a.status == payments.StatusRefunded || a.status == payments.StatusPartiallyRefunded) {
			manualReached[a.status] = true
		}
	}
	path := make([]payments.Status, 0, len(visited))
	for s := range visited {
		if _, ok := statusRank[s]; !ok {
			errorf("status %q, reached by %s, is no status a payment goes through", s, visited[s])
		}
		path = append(path, s)
	}
	sort.Slice(path, func(i, j int) bool { return statusRank[path[i]] < statusRank[path[j]] })
	pathEdges := map[edge]bool{}
	for k := 1; k < len(path); k++ {
		e := edge{path[k-1], path[k]}
		pathEdges[e] = true
		if !payments.CanMove(e.from, e.to) {
			errorf("the statuses it went through, %v, are no chain of moves: %s → %s", path, e.from, e.to)
			continue
		}
		switch {
		case webhookEdges[e] > 0:
		case e.to == payments.StatusAuthorized && p.initial == payments.StatusAuthorized && e.from == payments.StatusPending:
		case manualReached[e.to]:
			manualMoves++
		default:
			errorf("nothing explains the move %s → %s (%v)", e.from, e.to, path)
		}
	}
	for e, n := range webhookEdges {
		if n != 1 || !pathEdges[e] {
			errorf("%d applied webhooks moved it %s → %s, not a step of its chain %v", n, e.from, e.to, path)
		}
	}
	for _, s := range ignoredFrom {
		if _, ok := visited[s]; !ok {
			errorf("a webhook was ignored in status %s, which it never had (%v)", s, path)
		}
	}
	if last := path[len(path)-1]; d.Status != last {
		errorf("status %s, but its chain %v ends in %s", d.Status, path, last)
	}
	eventEdges := map[edge]int{}
	for _, ev := range events {
		eventEdges[edge{ev[0], ev[1]}]++
	}
	for e := range pathEdges {
		if eventEdges[e] != 1 {
			errorf("move %s → %s has %d events", e.from, e.to, eventEdges[e])
		}
	}
	for e, n := range eventEdges {
		if !pathEdges[e] {
			errorf("%d events of a move %s → %s, not in its chain %v", n, e.from, e.to, path)
		}
	}

	// (c) The amounts.
	if d.CapturedAmount > d.Amount || d.RefundedAmount > d.CapturedAmount || d.RefundedAmount < 0 {
		errorf("amount %d, captured %d, refunded %d", d.Amount, d.CapturedAmount, d.RefundedAmount)
	}
	var refunded int64
	for _, r := range d.Refunds {
		refunded += r.Amount
	}
	if refunded != d.RefundedAmount {
		errorf("refunds add up to %d, refundedAmount is %d (status %s; history %s)", refunded, d.RefundedAmount, d.Status, history(d))
	}
	switch d.Status {
	case payments.StatusPending, payments.StatusAuthorized:
		if d.CapturedAmount != 0 || d.RefundedAmount != 0 {
			errorf("%s with captured %d, refunded %d", d.Status, d.CapturedAmount, d.RefundedAmount)
		}
	case payments.StatusCaptured:
		if d.CapturedAmount != d.Amount || d.RefundedAmount != 0 {
			errorf("captured with captured %d of %d, refunded %d", d.CapturedAmount, d.Amount, d.RefundedAmount)
		}
	case payments.StatusPartiallyCaptured:
		if d.CapturedAmount <= 0 || d.CapturedAmount >= d.Amount || d.RefundedAmount != 0 {
			errorf("partially captured with captured %d of %d, refunded %d", d.CapturedAmount, d.Amount, d.RefundedAmount)
		}
	case payments.StatusRefunded:
		if d.CapturedAmount <= 0 || d.RefundedAmount != d.CapturedAmount {
			errorf("refunded with captured %d, refunded %d", d.CapturedAmount, d.RefundedAmount)
		}
	case payments.StatusPartiallyRefunded:
		if d.RefundedAmount <= 0 || d.RefundedAmount >= d.CapturedAmount {
			errorf("partially refunded with captured %d, refunded %d", d.CapturedAmount, d.RefundedAmount)
		}
	}
	// Each successful refund (not a replay) is one refund row, with the
	// refund id the provider gave; each other row is a refund only an
	// applied refund webhook reported, with an id of its own.
	var answered []string
	for _, a := range actions {
		if a.action == payments.ActionRefund && !a.replay {
			answered = append(answered, a.refundID)
		}
	}
	calls.mu.Lock()
	providerRefunds := slices.Clone(calls.refunds[p.session])
	captures := slices.Clone(calls.captures[p.session])
	calls.mu.Unlock()
	var manualRows []string
	reported := 0
	for _, r := range d.Refunds {
		switch {
		case slices.Contains(providerRefunds, r.ProviderRefundID):
			manualRows = append(manualRows, r.ProviderRefundID)
		case r.ProviderRefundID == r.ID && r.Amount > 0:
			reported++
		default:
			errorf("refund row %+v is neither a provider's refund nor one a webhook reported", *r)
		}
	}
	slices.Sort(answered)
	slices.Sort(manualRows)
	if !slices.Equal(answered, manualRows) {
		errorf("refunds answered %v, refund rows of provider refunds %v", answered, manualRows)
	}
	refundWebhooks := 0
	for _, w := range d.Webhooks {
		if w.Outcome == payments.OutcomeApplied && (w.StatusAfter == payments.StatusRefunded || w.StatusAfter == payments.StatusPartiallyRefunded) {
			refundWebhooks++
		}
	}
	if reported > refundWebhooks {
		errorf("%d refund rows reported by webhooks, but %d refund webhooks applied", reported, refundWebhooks)
	}

	// (d) No capture sent twice, nor for more than the payment.
	var capturedAtProvider int64
	keys := map[string]bool{}
	for _, c := range captures {
		capturedAtProvider += c.Amount
		if keys[c.IdempotencyKey] {
			errorf("capture %s sent to the provider twice", c.IdempotencyKey)
		}
		keys[c.IdempotencyKey] = true
	}
	if capturedAtProvider > p.amount {
		errorf("captured %d at the provider in %d captures, of a payment of %d", capturedAtProvider, len(captures), p.amount)
	}
	return applied, ignored, manualMoves
}

// history is a payment's webhook history, for messages.
func history(d *payments.Detail) string {
	var out []string
	for _, w := range d.Webhooks {
		amount := ""
		if w.Amount != nil {
			amount = fmt.Sprintf("(%d)", *w.Amount)
		}
		out = append(out, fmt.Sprintf("%s%s:%s→%s", w.MappedStatus, amount, w.StatusBefore, w.StatusAfter))
	}
	return fmt.Sprint(out)
}

// parallel runs fn(0…n-1) on workers goroutines and fails the test on
// the first error, once all have stopped.
func parallel(t *testing.T, workers, n int, fn func(i int) error) {
	t.Helper()
	var next atomic.Int64
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					errs <- nil
					return
				}
				if err := fn(i); err != nil {
					next.Store(int64(n))
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		t.Fatal(first)
	}
}
