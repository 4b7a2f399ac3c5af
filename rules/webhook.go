package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/internal/netguard"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// CallSigner signs CALL_WEBHOOK requests like outbound webhooks (the Kit
// passes the webhooks area's). SignCall returns the headers that sign
// body, sent to url for tenantID as message msgID, or nil headers when
// the tenant has nothing to sign it with (the call then goes unsigned).
type CallSigner interface {
	// SignCall returns the signing headers, or nil headers to send unsigned.
	SignCall(ctx context.Context, tenantID, url, msgID string, body []byte) (http.Header, error)
}

// WebhookCall is the durable job of a CALL_WEBHOOK action: the request,
// with its placeholders resolved, and where it came from.
type WebhookCall struct {
	TenantID string `json:"tenantId"`
	// RuleID is the calling rule's business id; ExecutionID the
	// execution's (its log rows' ExecutionID).
	RuleID      string `json:"ruleId"`
	ExecutionID string `json:"executionId"`
	// URL, Method and Headers are the action's, placeholders resolved.
	URL     string            `json:"url"`
	Method  string            `json:"method"`            // see URL
	Headers map[string]string `json:"headers,omitempty"` // see URL
	// Body is sent as JSON, except with GET; nil sends none.
	Body any `json:"body,omitempty"`
	// MessageID identifies the call to the receiver (webhook-id when
	// signed), the same on every retry of the job.
	MessageID string `json:"messageId"`
}

// newCallMessageID returns a call's message id: "msg_" and 32 hex digits,
// as outbound webhooks' deliveries have.
func newCallMessageID() string {
	return "msg_" + strings.ReplaceAll(store.NewID(), "-", "")
}

// Kind names the job.
func (WebhookCall) Kind() string { return "business_rules.call_webhook" }

// webhookTimeout bounds one call.
const webhookTimeout = 15 * time.Second

// webhookWorker sends CALL_WEBHOOK requests, signed by the signer when
// there is one. A 2xx answer completes the job; a 4xx other than 408 and
// 429, or a destination netguard refuses, ends it without retrying;
// anything else (5xx, 408, 429, network errors) is retried on the job
// engine's schedule.
type webhookWorker struct {
	client *http.Client
	signer CallSigner
}

func (w *webhookWorker) Work(ctx context.Context, job *jobs.Job[WebhookCall]) error {
	call := job.Args
	var payload []byte
	if call.Body != nil && call.Method != http.MethodGet {
		var err error
		if payload, err = json.Marshal(call.Body); err != nil {
			return jobs.Cancel(err)
		}
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, call.Method, call.URL, body)
	if err != nil {
		return jobs.Cancel(err)
	}
	for k, v := range call.Headers {
		req.Header.Set(k, v)
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if w.signer != nil && call.MessageID != "" {
		signed, err := w.signer.SignCall(ctx, call.TenantID, call.URL, call.MessageID, payload)
		if err != nil {
			return err
		}
		for name, values := range signed { // the signature's headers win over the action's
			req.Header[name] = values
		}
	}
	req.Header.Set("User-Agent", "tenantkit-business-rules")
	resp, err := w.client.Do(req)
	if errors.Is(err, netguard.ErrBlocked) {
		return jobs.Cancel(err) // a refused destination stays refused: no retries
	}
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return nil
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests:
		return jobs.Cancel(fmt.Errorf("CALL_WEBHOOK %s %s: status %d", call.Method, call.URL, s))
	default:
		return fmt.Errorf("CALL_WEBHOOK %s %s: status %d", call.Method, call.URL, s)
	}
}

func (w *webhookWorker) Timeout(*jobs.Job[WebhookCall]) time.Duration {
	return webhookTimeout + 5*time.Second
}

func newWebhookWorker(allowPrivate bool, signer CallSigner) *webhookWorker {
	return &webhookWorker{client: netguard.Client(netguard.Options{Timeout: webhookTimeout, AllowPrivate: allowPrivate}), signer: signer}
}
