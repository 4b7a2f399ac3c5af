package webhooksapi

import (
	"cmp"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Features of the webhook routes: the permission a route needs.
const (
	FeatureWebhooksView    = "webhooks.view"
	FeatureWebhooksManage  = "webhooks.manage"
	FeatureWebhooksSecrets = "webhooks.secrets"
	FeatureWebhooksTest    = "webhooks.test"
)

// routes are the outbound webhook endpoints: CRUD, secret
// rotation, test sends, the delivery log, the event catalogue and the
// delivery queues' owners (super admins).
func routes(svc *webhooks.Service, env *apikit.Env) []apikit.Route {
	h := webhookHandlers{svc: svc, catalogue: eventCatalogue(env.Kit.EventTypes())}
	const base = "/webhooks"
	page := apikit.PageQuery(50, 100)
	return []apikit.Route{
		// NoStore: create and rotate-secret show a signing secret; the
		// reads and the update show customHeaders in full, which commonly
		// carry the receiver's credentials (an Authorization header).
		{Method: "GET", Path: base, Handler: h.list, NoStore: true,
			Access: apikit.Access{Features: []string{FeatureWebhooksView}},
			Doc: apikit.Doc{Summary: "List webhooks",
				Query: append([]apikit.Param{apikit.TextQuery("search", "Text in the name or URL (case-insensitive)"),
					apikit.BoolQuery("isActive", "Only active (true) or inactive (false) webhooks")}, page...),
				Response: apikit.SearchPage[*webhooks.Webhook]{}}},
		{Method: "POST", Path: base, Handler: h.create, NoStore: true,
			Access: apikit.Access{Features: []string{FeatureWebhooksManage}},
			Doc: apikit.Doc{Summary: "Create a webhook (its secret is shown this one time)", Request: webhooks.Input{},
				Status: http.StatusCreated, Response: webhookCreated{}}},
		{Method: "GET", Path: base + "/{id}", Handler: h.get, NoStore: true,
			Access: apikit.Access{Features: []string{FeatureWebhooksView}},
			Doc:    apikit.Doc{Summary: "Get a webhook", Response: webhooks.Webhook{}}},
		{Method: "PUT", Path: base + "/{id}", Handler: h.update, NoStore: true,
			Access: apikit.Access{Features: []string{FeatureWebhooksManage}},
			Doc: apikit.Doc{Summary: "Update a webhook (fields left out are kept)", Request: webhooks.Patch{},
				Response: webhooks.Webhook{}}},
		{Method: "DELETE", Path: base + "/{id}", Handler: h.delete,
			Access: apikit.Access{Features: []string{FeatureWebhooksManage}},
			Doc:    apikit.Doc{Summary: "Delete a webhook", Status: http.StatusNoContent}},
		// POST /webhooks/inbound/{endpointId} and POST /webhooks/{id}/test
		// (or /rotate-secret) are the same pattern to net/http: one
		// pattern, told apart by Match.
		{Method: "POST", Path: base + "/{id}/{action}", Match: pathIs("id", "inbound"), Handler: h.inbound,
			ErrorBody: inboundErrorBody,
			Access:    apikit.Access{Public: true},
			Limits:    apikit.Limits{RateLimit: inboundLimit, MaxBodyBytes: apikit.MaxInboundBody},
			Doc: apikit.Doc{Summary: "Receive an inbound webhook (POST /webhooks/inbound/{endpointId}; the signature is the credential)",
				DocPath: base + "/inbound/{endpointId}", RequestContent: "application/json", Response: inboundAck{},
				Errors: []int{http.StatusConflict}}},
		{Method: "POST", Path: base + "/{id}/{action}", Match: pathIs("action", "rotate-secret"), Handler: h.rotate, NoStore: true,
			Access: apikit.Access{Features: []string{FeatureWebhooksSecrets}},
			Doc: apikit.Doc{Summary: "Rotate a webhook's signing secret (POST /webhooks/{id}/rotate-secret; the new one is shown this one time)",
				DocPath: base + "/{id}/rotate-secret", Response: webhooks.Rotation{}}},
		{Method: "POST", Path: base + "/{id}/{action}", Match: pathIs("action", "test"), Handler: h.test,
			Access: apikit.Access{Features: []string{FeatureWebhooksTest}},
			Doc: apikit.Doc{Summary: "Send a signed test delivery now (POST /webhooks/{id}/test)", DocPath: base + "/{id}/test",
				Response: webhooks.Delivery{}, Errors: []int{http.StatusConflict}}},
		{Method: "GET", Path: base + "/deliveries", Handler: h.listDeliveries,
			Access: apikit.Access{Features: []string{FeatureWebhooksView}},
			Doc: apikit.Doc{Summary: "List deliveries (?webhookId, eventType, status)",
				Query: append([]apikit.Param{apikit.TextQuery("webhookId", "The webhook's id"), apikit.TextQuery("eventType", "Exact event type"),
					apikit.EnumQuery("status", "The delivery's status", deliveryStatuses...)}, page...),
				Response: apikit.PageResponse[*webhooks.Delivery]{}}},
		{Method: "GET", Path: base + "/deliveries/{id}", Handler: h.getDelivery,
			Access: apikit.Access{Features: []string{FeatureWebhooksView}},
			Doc: apikit.Doc{Summary: "Get a delivery with its payload and response",
				Description: "Get a delivery with its payload and response. The path template overlaps POST /webhooks/{id}/test and " +
					"POST /webhooks/{id}/rotate-secret only in form: the methods differ, and a webhook's id is a generated UUID, never \"deliveries\"",
				Response: webhooks.Delivery{}}},
		{Method: "POST", Path: base + "/deliveries/{id}/retry", Handler: h.retry,
			Access: apikit.Access{Features: []string{FeatureWebhooksManage}},
			Doc: apikit.Doc{Summary: "Give a failed or expired delivery one more attempt", Response: webhooks.Delivery{},
				Errors: []int{http.StatusConflict}}},
		{Method: "GET", Path: base + "/events", Handler: h.events,
			Access: apikit.Access{Features: []string{FeatureWebhooksView}},
			Doc:    apikit.Doc{Summary: "The event types webhooks can subscribe to", Response: eventCatalogueBody{}}},
		h.queuesRoute(base), // webhooks_queues.go
	}
}

type webhookHandlers struct {
	svc       *webhooks.Service
	catalogue []catalogueEvent
}

// pathIs matches requests whose path wildcard name has value.
func pathIs(name, value string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.PathValue(name) == value }
}

// inboundLimit limits each inbound endpoint per client address (60 a
// minute).
var inboundLimit = &apikit.RateLimit{Points: 60, Duration: time.Minute, KeyPrefix: "webhooks-inbound", ByPathValue: "action"}

// inboundErrorBody is the inbound receiver's error body: {error} only.
func inboundErrorBody(_ int, _ error, message string, _ map[string]string) any {
	return map[string]string{"error": message}
}

func (h webhookHandlers) inbound(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body) // bounded by the route's MaxBodyBytes
	if err != nil {
		return apikit.DecodeError(err)
	}
	duplicate, err := h.svc.Receive(r.Context(), r.PathValue("action"), r.Header, body)
	switch {
	case errors.Is(err, webhooks.ErrUnknownEndpoint):
		return store.Errorf(store.ErrNotFound, "Webhook endpoint not found")
	case errors.Is(err, webhooks.ErrVerification):
		return store.Errorf(store.ErrInvalid, "Verification failed")
	case err != nil:
		return err
	}
	return apikit.Encode(w, http.StatusOK, inboundAck{OK: true, Duplicate: duplicate})
}

// inboundAck answers an accepted inbound message: {ok: true}, with
// duplicate: true when its id was accepted before.
type inboundAck struct {
	OK        bool `json:"ok"`
	Duplicate bool `json:"duplicate,omitempty"`
}

func (h webhookHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.ParsePage(q, 50, 100)
	if err != nil {
		return err
	}
	active, err := apikit.ParseBool(q, "isActive")
	if err != nil {
		return err
	}
	search := q.Get("search")
	items, total, err := h.svc.List(r.Context(), webhooks.Filter{Search: search, IsActive: active, Limit: p.PageSize, Offset: p.Offset()})
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.NewSearchPage(r.Context(), items, total, search != "", p))
}

func (h webhookHandlers) create(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[webhooks.Input](r)
	if err != nil {
		return err
	}
	wh, secret, err := h.svc.Create(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, webhookCreated{wh, secret})
}

// webhookCreated is a new webhook with its signing secret, shown this one
// time.
type webhookCreated struct {
	*webhooks.Webhook
	Secret string `json:"secret"`
}

func (h webhookHandlers) get(w http.ResponseWriter, r *http.Request) error {
	wh, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, wh)
}

func (h webhookHandlers) update(w http.ResponseWriter, r *http.Request) error {
	p, err := apikit.Decode[webhooks.Patch](r)
	if err != nil {
		return err
	}
	wh, err := h.svc.Update(r.Context(), r.PathValue("id"), p)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, wh)
}

func (h webhookHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h webhookHandlers) rotate(w http.ResponseWriter, r *http.Request) error {
	rot, err := h.svc.RotateSecret(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, rot)
}

func (h webhookHandlers) test(w http.ResponseWriter, r *http.Request) error {
	d, err := h.svc.Test(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, d)
}

// deliveryStatuses are the values of the status filter.
var deliveryStatuses = []string{webhooks.StatusPending, webhooks.StatusSending, webhooks.StatusDelivered, webhooks.StatusFailed, webhooks.StatusExpired}

func (h webhookHandlers) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.ParsePage(q, 50, 100)
	if err != nil {
		return err
	}
	f := webhooks.DeliveryFilter{WebhookID: q.Get("webhookId"), EventType: q.Get("eventType"), Status: q.Get("status"),
		Limit: p.PageSize, Offset: p.Offset()}
	if f.Status != "" && !slices.Contains(deliveryStatuses, f.Status) {
		return store.Invalid("status", "must be one of "+strings.Join(deliveryStatuses, ", "))
	}
	items, total, err := h.svc.ListDeliveries(r.Context(), f)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.NewPage(items, total, p))
}

func (h webhookHandlers) getDelivery(w http.ResponseWriter, r *http.Request) error {
	d, err := h.svc.GetDelivery(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, d)
}

func (h webhookHandlers) retry(w http.ResponseWriter, r *http.Request) error {
	d, err := h.svc.Retry(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, d)
}

// catalogueEvent is one entry of GET /webhooks/events.
type catalogueEvent struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description"`
	// Category is crud (created, updated, deleted) or lifecycle.
	Category string `json:"category" jsonschema:"enum=crud,enum=lifecycle"`
	// Module is the event name's first segment.
	Module string `json:"module"`
	// ClientBroadcast: the type's events also reach clients live on GET
	// /events/stream.
	ClientBroadcast bool `json:"clientBroadcast"`
}

// eventCatalogue lists, by id, the event types the Kit's areas declare
// (areaTypes) and the identity area's (once, when identity is one of
// them). The webhooks area's own events are left out, as a webhook
// subscribed to them would only echo its own changes.
func eventCatalogue(areaTypes []store.EventType) []catalogueEvent {
	var out []catalogueEvent
	seen := map[string]bool{}
	for _, et := range slices.Concat(identity.EventTypes, areaTypes) {
		if seen[et.ID] || slices.ContainsFunc(webhooks.EventTypes, func(own store.EventType) bool { return own.ID == et.ID }) {
			continue
		}
		seen[et.ID] = true
		action := et.ID[strings.LastIndexByte(et.ID, '.')+1:]
		category := "lifecycle"
		if action == "created" || action == "updated" || action == "deleted" {
			category = "crud"
		}
		out = append(out, catalogueEvent{ID: et.ID, Label: et.Label, Description: et.Description, Category: category,
			Module: et.ID[:strings.IndexByte(et.ID, '.')], ClientBroadcast: et.ClientBroadcast})
	}
	slices.SortFunc(out, func(a, b catalogueEvent) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (h webhookHandlers) events(w http.ResponseWriter, r *http.Request) error {
	events := h.catalogue
	return apikit.Encode(w, http.StatusOK, eventCatalogueBody{events, len(events)})
}

// eventCatalogueBody is the body of GET /webhooks/events.
type eventCatalogueBody struct {
	Data  []catalogueEvent `json:"data"`
	Total int              `json:"total"`
}
