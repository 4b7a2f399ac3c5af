package webhooks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// Inbound is a message an inbound endpoint accepted.
type Inbound struct {
	// ID is the message's id; a repeated id is a duplicate.
	ID string `json:"id"`
	// Type is the event type the sender gave.
	Type string `json:"type"`
	// Payload is the message body (JSON).
	Payload json.RawMessage `json:"payload"`
}

// Adapter verifies, parses and processes the messages of one kind of
// sender.
type Adapter interface {
	// Verify authenticates a request from its headers and raw body; an
	// error refuses it.
	Verify(header http.Header, body []byte) error
	// Parse reads a verified request's message.
	Parse(header http.Header, body []byte) (Inbound, error)
	// Process handles an accepted message, in a durable job (at least
	// once: a retry may repeat it). The receiver emits
	// webhooks.inbound.received for it afterwards.
	Process(ctx context.Context, endpointID string, in Inbound) error
}

// Endpoint is an inbound endpoint: its adapter, and the tenant (and
// organization) its messages belong to, if any; without one the
// webhooks.inbound.received events are global.
type Endpoint struct {
	Adapter        Adapter // verifies and parses the endpoint's messages
	TenantID       string
	OrganizationID string
}

// EventInboundReceived is an inbound message processed: data carries
// endpointId, messageId, type and payload.
const EventInboundReceived = "webhooks.inbound.received"

// Errors of Receive.
var (
	ErrUnknownEndpoint = errors.New("Webhook endpoint not found")
	ErrVerification    = errors.New("Verification failed")
)

// maxInboundType bounds a message's event type.
const maxInboundType = 200

// AddEndpoint registers an inbound endpoint under id (before the service
// receives requests; the server configures them from
// APP_INBOUND_WEBHOOKS).
func (s *Service) AddEndpoint(id string, ep Endpoint) {
	s.inboundMu.Lock()
	defer s.inboundMu.Unlock()
	s.endpoints[id] = ep
}

func (s *Service) endpoint(id string) (Endpoint, bool) {
	s.inboundMu.RLock()
	defer s.inboundMu.RUnlock()
	ep, ok := s.endpoints[id]
	return ep, ok
}

// Receive accepts a request to an inbound endpoint: it verifies it, and
// stores the message with the job that processes it, unless its id was
// accepted before (duplicate). An unknown endpoint is ErrUnknownEndpoint,
// a request that does not verify ErrVerification; while webhooks are
// switched off, ErrDisabled.
func (s *Service) Receive(ctx context.Context, endpointID string, header http.Header, body []byte) (duplicate bool, err error) {
	ep, ok := s.endpoint(endpointID)
	if !ok {
		return false, ErrUnknownEndpoint
	}
	if !s.Enabled() {
		return false, ErrDisabled
	}
	if err := ep.Adapter.Verify(header, body); err != nil {
		return false, fmt.Errorf("%w: %v", ErrVerification, err)
	}
	in, err := ep.Adapter.Parse(header, body)
	switch {
	case err != nil:
		return false, store.Errorf(store.ErrInvalid, "The message cannot be read: %v", err)
	case in.ID == "" || !store.Storable(in.ID) || len(in.ID) > 255:
		return false, store.Errorf(store.ErrInvalid, "The message has no usable id")
	case in.Type == "" || !store.Storable(in.Type) || len(in.Type) > maxInboundType:
		return false, store.Errorf(store.ErrInvalid, "The message has no usable type")
	case !json.Valid(in.Payload) || store.JSONHasNUL(in.Payload):
		return false, store.Errorf(store.ErrInvalid, "The message body must be JSON without NUL characters")
	}
	if s.jobs == nil {
		return false, errors.New("webhooks: inbound messages need a job engine (RegisterJobs)")
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		inserted, err := s.store.InsertInbound(ctx, tx, &InboundReceipt{EndpointID: endpointID, Message: in,
			TenantID: ep.TenantID, OrganizationID: ep.OrganizationID, ReceivedAt: tx.Now()})
		if err != nil || !inserted {
			duplicate = err == nil
			return err
		}
		_, err = s.jobs.EnqueueTx(ctx, tx, InboundJob{EndpointID: endpointID, MessageID: in.ID}, nil)
		return err
	})
	return duplicate, err
}

// InboundJob processes one accepted inbound message.
type InboundJob struct {
	EndpointID string `json:"endpointId"`
	MessageID  string `json:"messageId"`
}

// Kind names the job.
func (InboundJob) Kind() string { return "webhooks.inbound" }

type inboundWorker struct{ svc *Service }

// Work has the endpoint's adapter process the message, then marks it
// processed and emits webhooks.inbound.received, together.
func (w inboundWorker) Work(ctx context.Context, job *jobs.Job[InboundJob]) error {
	s := w.svc
	ep, ok := s.endpoint(job.Args.EndpointID)
	if !ok {
		return jobs.Cancel(fmt.Errorf("inbound endpoint %q is no longer configured", job.Args.EndpointID))
	}
	r, err := s.store.GetInbound(ctx, s.db, job.Args.EndpointID, job.Args.MessageID)
	if errors.Is(err, store.ErrNotFound) || err == nil && r.ProcessedAt != nil {
		return nil // gone, or a repeated job
	}
	if err != nil {
		return err
	}
	in := r.Message
	if err := ep.Adapter.Process(ctx, job.Args.EndpointID, in); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.store.MarkInboundProcessed(ctx, tx, job.Args.EndpointID, in.ID, tx.Now()); err != nil {
			return err
		}
		_, err := tx.EmitData(ctx, EventInboundReceived, store.Scope{TenantID: ep.TenantID, OrganizationID: ep.OrganizationID},
			map[string]any{"endpointId": job.Args.EndpointID, "messageId": in.ID, "type": in.Type, "payload": in.Payload})
		return err
	})
}

// StandardAdapter receives Standard Webhooks: it verifies the webhook-id,
// webhook-timestamp (within 5 minutes) and webhook-signature headers with
// Secret, using the Standard Webhooks library. The message id is
// webhook-id; the type is the body's "type" field ("webhooks.inbound"
// when it has none). Process does nothing: the host handles the
// webhooks.inbound.received event.
type StandardAdapter struct {
	// Secret is the signing secret ("whsec_" and base64).
	Secret string
}

// DefaultInboundType is the type of an inbound message that names none.
const DefaultInboundType = "webhooks.inbound"

// Verify checks the Standard Webhooks signature.
func (a StandardAdapter) Verify(header http.Header, body []byte) error {
	wh, err := standardwebhooks.NewWebhook(a.Secret)
	if err != nil {
		return err
	}
	return wh.Verify(body, header)
}

// Parse reads the message id and type.
func (a StandardAdapter) Parse(header http.Header, body []byte) (Inbound, error) {
	in := Inbound{ID: header.Get(HeaderID), Type: DefaultInboundType, Payload: body}
	var msg struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return in, err
	}
	if msg.Type != "" {
		in.Type = msg.Type
	}
	return in, nil
}

// Process does nothing (see StandardAdapter).
func (StandardAdapter) Process(context.Context, string, Inbound) error { return nil }

// InboundConfig is one endpoint of APP_INBOUND_WEBHOOKS.
type InboundConfig struct {
	// Adapter is "standard" (Standard Webhooks).
	Adapter string `json:"adapter"`
	// Secret is the adapter's secret ("whsec_…" for standard).
	Secret string `json:"secret"`
	// TenantID and OrganizationID own the endpoint's messages (optional).
	TenantID       string `json:"tenantId"`
	OrganizationID string `json:"organizationId"`
}

// ParseInboundEndpoints reads APP_INBOUND_WEBHOOKS: a JSON object mapping
// endpoint ids to {adapter, secret, tenantId?, organizationId?}. Empty is
// none.
func ParseInboundEndpoints(text string) (map[string]Endpoint, error) {
	out := map[string]Endpoint{}
	if text == "" {
		return out, nil
	}
	var cfg map[string]InboundConfig
	if err := json.Unmarshal([]byte(text), &cfg); err != nil {
		return nil, fmt.Errorf("want a JSON object of endpoint id → {adapter, secret}: %w", err)
	}
	for id, c := range cfg {
		if id == "" || !store.Storable(id) || len(id) > 100 {
			return nil, fmt.Errorf("endpoint id %q: want 1 to 100 characters of text", id)
		}
		switch c.Adapter {
		case "standard":
			if _, err := standardwebhooks.NewWebhook(c.Secret); err != nil || !strongSecret(c.Secret) {
				return nil, fmt.Errorf("endpoint %q: secret must be whsec_ and the base64 of at least %d random bytes", id, minInboundKey)
			}
			out[id] = Endpoint{Adapter: StandardAdapter{Secret: c.Secret}, TenantID: c.TenantID, OrganizationID: c.OrganizationID}
		default:
			return nil, fmt.Errorf("endpoint %q: unknown adapter %q (known: standard)", id, c.Adapter)
		}
	}
	return out, nil
}

// minInboundKey is the shortest signing key an inbound endpoint takes.
const minInboundKey = 16

// strongSecret reports whether a whsec_ secret's key is long enough and
// not all zero bytes (an empty or zero key lets anyone sign).
func strongSecret(secret string) bool {
	rest, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) < minInboundKey {
		return false
	}
	return slices.ContainsFunc(key, func(b byte) bool { return b != 0 })
}
