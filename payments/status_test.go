package payments_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The status machine, written out here independently of status.go: the
// statuses each status may move to. Absent: terminal (refunded,
// cancelled, failed, expired) or unknown, which move nowhere.
var wantMoves = map[payments.Status][]payments.Status{
	"pending":            {"authorized", "captured", "failed", "expired", "cancelled"},
	"authorized":         {"captured", "partially_captured", "cancelled", "failed"},
	"captured":           {"refunded", "partially_refunded"},
	"partially_captured": {"captured", "refunded", "partially_refunded", "cancelled"},
	"partially_refunded": {"refunded"},
}

// wantAllows is the statuses each action acts on.
var wantAllows = map[payments.Action][]payments.Status{
	"capture": {"pending", "authorized", "captured", "partially_captured"},
	"refund":  {"captured", "partially_captured", "partially_refunded"},
	"cancel":  {"pending", "authorized"},
}

var (
	allStatuses = []payments.Status{"pending", "authorized", "captured", "partially_captured", "refunded",
		"partially_refunded", "cancelled", "failed", "expired", "unknown"}
	// notStatuses are strings a provider or a caller might send that are
	// no status: they move nowhere and nothing moves to them.
	notStatuses = []payments.Status{"", "bogus", "PENDING", "Captured", "succeeded"}
	allActions  = []payments.Action{"capture", "refund", "cancel"}
)

func TestStatusesAreTheUnifiedSet(t *testing.T) {
	if got := slices.Sorted(slices.Values(payments.Statuses)); !slices.Equal(got, slices.Sorted(slices.Values(allStatuses))) {
		t.Errorf("payments.Statuses = %v, want %v", payments.Statuses, allStatuses)
	}
	for _, s := range allStatuses {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false", s)
		}
		wantTerminal := s == "refunded" || s == "cancelled" || s == "failed" || s == "expired"
		if s.Terminal() != wantTerminal {
			t.Errorf("%q.Terminal() = %v, want %v", s, s.Terminal(), wantTerminal)
		}
	}
	for _, s := range notStatuses {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q: Valid %v, Terminal %v, want neither", s, s.Valid(), s.Terminal())
		}
	}
}

// Every status × every status, CanMove and Decide against the table.
func TestStatusMachineExhaustive(t *testing.T) {
	every := append(slices.Clone(allStatuses), notStatuses...)
	moves := 0
	for _, from := range every {
		for _, to := range every {
			want := slices.Contains(wantMoves[from], to)
			if got := payments.CanMove(from, to); got != want {
				t.Errorf("CanMove(%q, %q) = %v, want %v", from, to, got, want)
			}
			next, changed := payments.Decide(from, to)
			wantNext := from
			if want {
				wantNext = to
				moves++
			}
			if next != wantNext || changed != want {
				t.Errorf("Decide(%q, %q) = %q, %v; want %q, %v", from, to, next, changed, wantNext, want)
			}
		}
	}
	if moves != 16 {
		t.Errorf("%d allowed moves, want the table's 16", moves)
	}
}

// No chain of moves leads back to a status it left: a payment never
// moves back (so each status appears at most once in its history).
func TestStatusMachineHasNoCycle(t *testing.T) {
	for _, start := range allStatuses {
		reached := map[payments.Status]bool{}
		frontier := []payments.Status{start}
		for len(frontier) > 0 {
			s := frontier[0]
			frontier = frontier[1:]
			for _, next := range allStatuses {
				if payments.CanMove(s, next) && !reached[next] {
					reached[next] = true
					frontier = append(frontier, next)
				}
			}
		}
		if reached[start] {
			t.Errorf("%s can come back to itself", start)
		}
		if start.Terminal() || start == payments.StatusUnknown {
			if len(reached) != 0 {
				t.Errorf("%s moves on, to %v", start, reached)
			}
		}
	}
}

// Every status × every action, Allows against the table.
func TestAllowsExhaustive(t *testing.T) {
	every := append(slices.Clone(allStatuses), notStatuses...)
	for _, s := range every {
		for _, a := range append(slices.Clone(allActions), "void", "") {
			want := slices.Contains(wantAllows[a], s)
			if got := payments.Allows(s, a); got != want {
				t.Errorf("Allows(%q, %q) = %v, want %v", s, a, got, want)
			}
		}
	}
}

func TestStatusConflictErrorMessage(t *testing.T) {
	err := error(&payments.StatusConflictError{Action: payments.ActionRefund, Status: payments.StatusPartiallyCaptured})
	if want := `Cannot refund a payment in status "partially_captured"`; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

// Through the Service and the mock providers: a payment brought to each
// status (through sessions, actions and webhooks where one leads there;
// expired and unknown, which no mock call reaches, written through the
// store), then each action: done, or a *StatusConflictError saying
// `Cannot <action> a payment in status "<status>"`, and the payment
// unchanged.
func TestActionsInEveryStatus(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(db, payments.Options{})
		tn := newTenant(t)
		sqlStore := payments.NewSQLStore()

		// reach returns a new payment of 100.00 USD in status s.
		reach := func(t *testing.T, s payments.Status) string {
			t.Helper()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("reaching %s: %v", s, err)
				}
			}
			var id string
			switch s {
			case "pending", "failed", "expired", "unknown":
				id = session(t, svc, tn, payments.KeyMockProcessing, "100", "").TransactionID
			case "authorized", "partially_captured", "cancelled":
				id = session(t, svc, tn, payments.KeyMock, "100", payments.CaptureManual).TransactionID
			default:
				id = session(t, svc, tn, payments.KeyMock, "100", payments.CaptureAutomatic).TransactionID
			}
			switch s {
			case "partially_captured":
				_, err := svc.Capture(tn.ctx, payments.CaptureRequest{TransactionID: id, Amount: "40"})
				must(err)
			case "partially_refunded":
				_, err := svc.Refund(tn.ctx, payments.RefundRequest{TransactionID: id, Amount: "30"})
				must(err)
			case "refunded":
				_, err := svc.Refund(tn.ctx, payments.RefundRequest{TransactionID: id})
				must(err)
			case "cancelled":
				_, err := svc.Cancel(tn.ctx, payments.CancelRequest{TransactionID: id})
				must(err)
			case "failed":
				p, err := svc.Get(tn.ctx, id)
				must(err)
				body := mockEvent("evt_"+store.NewID(), p.SessionID, payments.StatusFailed, nil)
				_, err = svc.Receive(t.Context(), payments.KeyMockProcessing, signed(body, secretOf(tn.id)), body)
				must(err)
				d, err := svc.GetDetail(tn.ctx, id)
				must(err)
				must(svc.ApplyWebhook(t.Context(), tn.id, d.Webhooks[0].ID))
			case "expired", "unknown":
				p, err := svc.Get(tn.ctx, id)
				must(err)
				p.Status, p.UpdatedAt = s, db.Now()
				must(db.Tx(t.Context(), func(tx *store.Tx) error { return sqlStore.UpdateTransaction(t.Context(), tx, p) }))
			}
			p, err := svc.Get(tn.ctx, id)
			must(err)
			if p.Status != s {
				t.Fatalf("reaching %s: the payment is %s", s, p.Status)
			}
			return id
		}

		for _, s := range allStatuses {
			for _, a := range allActions {
				t.Run(fmt.Sprintf("%s/%s", a, s), func(t *testing.T) {
					id := reach(t, s)
					before, err := svc.Get(tn.ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					var status payments.Status
					switch a {
					case "capture":
						var res *payments.CaptureResponse
						if res, err = svc.Capture(tn.ctx, payments.CaptureRequest{TransactionID: id}); err == nil {
							status = res.Status
						}
					case "refund":
						var res *payments.RefundResponse
						if res, err = svc.Refund(tn.ctx, payments.RefundRequest{TransactionID: id}); err == nil {
							status = res.Status
						}
					case "cancel":
						var res *payments.CancelResponse
						if res, err = svc.Cancel(tn.ctx, payments.CancelRequest{TransactionID: id}); err == nil {
							status = res.Status
						}
					}
					after, getErr := svc.Get(tn.ctx, id)
					if getErr != nil {
						t.Fatal(getErr)
					}
					if slices.Contains(wantAllows[a], s) {
						want := map[payments.Action]payments.Status{"capture": "captured", "refund": "refunded", "cancel": "cancelled"}[a]
						if err != nil || status != want || after.Status != want {
							t.Fatalf("%s from %s: %v, answered %q, now %q; want %q", a, s, err, status, after.Status, want)
						}
						return
					}
					var conflict *payments.StatusConflictError
					if !errors.As(err, &conflict) {
						t.Fatalf("%s from %s: %v, want a *StatusConflictError", a, s, err)
					}
					if conflict.Action != a || conflict.Status != s {
						t.Errorf("the conflict says %s from %s", conflict.Action, conflict.Status)
					}
					if want := fmt.Sprintf("Cannot %s a payment in status %q", a, s); err.Error() != want {
						t.Errorf("message %q, want %q", err.Error(), want)
					}
					if after.Status != before.Status || after.CapturedAmount != before.CapturedAmount ||
						after.RefundedAmount != before.RefundedAmount || !after.UpdatedAt.Equal(before.UpdatedAt) {
						t.Errorf("a refused %s changed the payment: %+v → %+v", a, before, after)
					}
				})
			}
		}
	}, payments.Migrations)
}
