package webhooksapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// GET /webhooks/queues: the webhooks' delivery queues for operators,
// which process drains each one and how far behind it is
// (webhooks.Service.QueueOwners). It is a super-admin route: it names the
// servers' hosts and process ids and shows every tenant's queues (as the
// processes drain them), which are the operator's concern, not a
// tenant's; ?tenantId picks one tenant's out.

// queuesRoute is the route, in webhookRoutes.
func (h webhookHandlers) queuesRoute(base string) apikit.Route {
	return apikit.Route{Method: "GET", Path: base + "/queues", Handler: h.queues,
		Access: apikit.Access{SuperAdmin: true},
		Doc: apikit.Doc{Summary: "Delivery queues: which server process drains each webhook's deliveries, and how far behind it is (super admins)",
			Query: []apikit.Param{apikit.TextQuery("tenantId", "Only the queues of this tenant's webhooks")}, Response: queuesBody{},
			Errors: []int{http.StatusNotImplemented}}}
}

// queuesBody is the body of GET /webhooks/queues.
type queuesBody struct {
	Data  []queueItem `json:"data"`
	Total int         `json:"total"`
}

// queueItem is one queue of GET /webhooks/queues: a webhook whose queue a
// drain holds or is on its way to, or that has due deliveries.
type queueItem struct {
	WebhookID string `json:"webhookId"`
	TenantID  string `json:"tenantId"`
	// Holder is the process draining the queue: host:pid:instance.
	Holder     *string    `json:"holder" jsonschema:"description=The server process whose drain holds the queue's lease: host:pid:instance ('unknown' for a lease taken by an older version); null when no drain holds it"`
	LeaseUntil *time.Time `json:"leaseUntil" jsonschema:"description=When the holder's lease ends unless renewed (every second); null when none is held"`
	Live       bool       `json:"live" jsonschema:"description=The lease had not ended at the read. A holder whose lease is not live died or stalled: another process takes its queue over within about a second"`
	Queued     bool       `json:"queued" jsonschema:"description=Deliveries arrived that no drain has looked at yet (a drain is on its way)"`
	Due        int        `json:"due" jsonschema:"description=Deliveries due now: first attempts and retries whose time has come (those being sent included)"`
	// OldestDueAgeMs is the queue's lag.
	OldestDueAgeMs *int64 `json:"oldestDueAgeMs" jsonschema:"description=How long the oldest due delivery has been due in milliseconds (the queue's lag); null when none is due"`
}

func (h webhookHandlers) queues(w http.ResponseWriter, r *http.Request) error {
	owners, err := h.svc.QueueOwners(r.Context(), r.URL.Query().Get("tenantId"))
	if errors.Is(err, errors.ErrUnsupported) {
		return &apikit.StatusError{Status: http.StatusNotImplemented, Message: "The webhooks store does not report its queues", Err: err}
	}
	if err != nil {
		return err
	}
	items := make([]queueItem, len(owners))
	for i, o := range owners {
		it := queueItem{WebhookID: o.WebhookID, TenantID: o.TenantID, Live: o.Live, Queued: o.Queued, Due: o.Due}
		if o.Holder != "" {
			it.Holder = &o.Holder
		}
		if !o.LeaseUntil.IsZero() {
			it.LeaseUntil = &o.LeaseUntil
		}
		if o.Due > 0 {
			ms := o.Lag.Milliseconds()
			it.OldestDueAgeMs = &ms
		}
		items[i] = it
	}
	return apikit.Encode(w, http.StatusOK, queuesBody{items, len(items)})
}
