package paymentsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/internal/jsonenc"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the payment gateway routes: the permission a route needs.
const (
	FeaturePaymentsView    = "payment_gateways.view"
	FeaturePaymentsManage  = "payment_gateways.manage"
	FeaturePaymentsCapture = "payment_gateways.capture"
	FeaturePaymentsRefund  = "payment_gateways.refund"
)

// routes are the payment gateway endpoints: sessions, capture,
// refund, cancel, status, the transaction lists and the providers'
// webhooks.
func routes(svc *payments.Service, env *apikit.Env) []apikit.Route {
	h := paymentHandlers{svc: svc}
	const base = "/payment_gateways"
	// The POSTs that reach a provider: 422 for an invalid payload or an
	// unknown or unconfigured provider, 409 for a status that forbids the
	// action or the provider's refusal, 502 for any other provider failure.
	providerErrors := []int{http.StatusConflict, http.StatusUnprocessableEntity, http.StatusBadGateway}
	actionErrors := []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusBadGateway}
	return []apikit.Route{
		// NoStore: a session's clientSecret confirms its payment.
		{Method: "POST", Path: base + "/sessions", Handler: h.createSession, ErrorBody: paymentErrorBody, NoStore: true,
			Access: apikit.Access{Features: []string{FeaturePaymentsManage}},
			Doc: apikit.Doc{Summary: "Open a payment session at a provider", Request: payments.SessionRequest{},
				Status: http.StatusCreated, Response: payments.Session{}, Errors: providerErrors}},
		{Method: "POST", Path: base + "/capture", Handler: h.capture, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Features: []string{FeaturePaymentsCapture}},
			Doc: apikit.Doc{Summary: "Capture an authorized payment (all of it, or amount)", Request: payments.CaptureRequest{},
				Response: payments.CaptureResponse{}, Errors: actionErrors}},
		{Method: "POST", Path: base + "/refund", Handler: h.refund, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Features: []string{FeaturePaymentsRefund}},
			Doc: apikit.Doc{Summary: "Refund a captured payment (all of what is left, or amount)", Request: payments.RefundRequest{},
				Response: payments.RefundResponse{}, Errors: actionErrors}},
		{Method: "POST", Path: base + "/cancel", Handler: h.cancel, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Features: []string{FeaturePaymentsManage}},
			Doc: apikit.Doc{Summary: "Cancel a payment before capture", Request: payments.CancelRequest{},
				Response: payments.CancelResponse{}, Errors: actionErrors}},
		{Method: "GET", Path: base + "/status", Handler: h.status, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Features: []string{FeaturePaymentsView}},
			Doc: apikit.Doc{Summary: "A payment's status (?transactionId)",
				Query:    []apikit.Param{{Name: "transactionId", Required: true, Pattern: paymentIDPattern, Description: "The payment's transactionId"}},
				Response: payments.StatusView{}, Errors: []int{http.StatusNotFound}}},
		{Method: "POST", Path: base + "/status", Handler: h.refresh, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Features: []string{FeaturePaymentsManage}},
			Doc: apikit.Doc{Summary: "Refresh a payment's status from its provider ({transactionId})",
				Request: payments.RefreshRequest{}, Response: payments.StatusView{}, Errors: actionErrors}},
		{Method: "GET", Path: base + "/transactions", Handler: h.list, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Features: []string{FeaturePaymentsView}},
			Doc: apikit.Doc{Summary: "List payments, newest first (page, pageSize, status, providerKey)",
				Query: append(apikit.PageQuery(20, 100), apikit.EnumQuery("status", "Payment status", paymentStatusValues()...),
					apikit.TextQuery("providerKey", "Exact provider key")), Response: apikit.PageResponse[paymentTransaction]{}}},
		{Method: "GET", Path: base + "/transactions/{id}", Handler: h.get, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Features: []string{FeaturePaymentsView}},
			Doc:    apikit.Doc{Summary: "A payment with its refunds and webhook history", Response: paymentTransactionDetail{}}},
		{Method: "GET", Path: base + "/providers", Handler: h.providers,
			Access: apikit.Access{Features: []string{FeaturePaymentsView}},
			Doc:    apikit.Doc{Summary: "The providers sessions may use", Response: paymentProviderList{}}},
		{Method: "POST", Path: base + "/webhook/{provider}", Handler: h.webhook, ErrorBody: paymentErrorBody,
			Access: apikit.Access{Public: true},
			Limits: apikit.Limits{RateLimit: paymentWebhookLimit, MaxBodyBytes: apikit.MaxInboundBody},
			Doc: apikit.Doc{Summary: "Receive a provider's webhook (its signature is the credential)",
				// The provider's raw body, as it sent it (its signature covers
				// the bytes).
				RequestContent: "application/json", Status: http.StatusAccepted, Response: paymentWebhookAccepted{},
				Errors: []int{http.StatusUnauthorized}}},
	}
}

var _ = apikit.DocEnum(payments.Statuses...)

// paymentIDPattern is what store.IsID accepts: a UUID in its 36-character
// form, either case.
const paymentIDPattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

// paymentStatusValues are the unified statuses, for the status filter.
func paymentStatusValues() []string {
	out := make([]string, len(payments.Statuses))
	for i, v := range payments.Statuses {
		out[i] = string(v)
	}
	return out
}

// paymentWebhookLimit limits each provider's webhooks per client address
// (60 a minute).
var paymentWebhookLimit = &apikit.RateLimit{Points: 60, Duration: time.Minute, KeyPrefix: "payments-webhook", ByPathValue: "provider"}

type paymentHandlers struct {
	svc *payments.Service
}

// paymentErrorBody is {error, details?}: the payment routes' documented
// body.
func paymentErrorBody(status int, err error, message string, details map[string]string) any {
	if status == http.StatusUnprocessableEntity && len(details) > 0 {
		message = "Invalid payload"
	}
	return apikit.DefaultErrorBody(status, err, message, details)
}

// paymentError gives the payment POSTs their statuses: an invalid payload
// or an unknown or unconfigured provider is 422, a status that forbids
// the action or a provider's refusal 409, any other provider failure 502
// with a vague message (the cause is logged).
func paymentError(err error) error {
	var conflict *payments.StatusConflictError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrInvalid):
		return &apikit.StatusError{Status: http.StatusUnprocessableEntity, Err: err}
	case errors.Is(err, payments.ErrUnknownProvider):
		return &apikit.StatusError{Status: http.StatusUnprocessableEntity, Message: unwrapMessage(err), Err: err}
	case errors.Is(err, payments.ErrNotConfigured):
		return &apikit.StatusError{Status: http.StatusUnprocessableEntity, Message: "The payment provider is not configured for this tenant", Err: err}
	case errors.As(err, &conflict):
		return &apikit.StatusError{Status: http.StatusConflict, Message: conflict.Error(), Err: err}
	case errors.Is(err, payments.ErrDeclined):
		return &apikit.StatusError{Status: http.StatusConflict, Message: unwrapMessage(err), Err: err}
	case errors.Is(err, payments.ErrProvider):
		return &apikit.StatusError{Status: http.StatusBadGateway, Message: "The payment provider failed; try again later", Err: err}
	}
	return err
}

// unwrapMessage is the part of a wrapped sentinel's text after its
// sentinel ("payments: unknown provider: No gateway adapter…" → "No
// gateway adapter…").
func unwrapMessage(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{payments.ErrUnknownProvider, payments.ErrDeclined} {
		if prefix := sentinel.Error() + ": "; len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
			return msg[len(prefix):]
		}
	}
	return msg
}

// decodePayment decodes a payment POST's body. An amount must be a JSON
// number: a string ("10") is refused, as encoding/json would take it.
func decodePayment[T any](r *http.Request) (T, error) {
	var v T
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return v, apikit.DecodeError(err)
	}
	var probe struct {
		Amount json.RawMessage `json:"amount"`
	}
	if json.Unmarshal(body, &probe) == nil && len(probe.Amount) > 0 && !bytes.Equal(probe.Amount, []byte("null")) {
		if c := probe.Amount[0]; c != '-' && (c < '0' || c > '9') {
			return v, store.Invalid("amount", "must be a number")
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return apikit.Decode[T](r)
}

func (h paymentHandlers) createSession(w http.ResponseWriter, r *http.Request) error {
	in, err := decodePayment[payments.SessionRequest](r)
	if err != nil {
		return paymentError(err)
	}
	s, err := h.svc.CreateSession(r.Context(), in)
	if err != nil {
		return paymentError(err)
	}
	body, err := appendSession(make([]byte, 0, 512), s)
	if err != nil {
		return err
	}
	return apikit.EncodeJSON(w, http.StatusCreated, body)
}

// appendSession appends s as apikit.Encode writes it (its fields in
// order, strings HTML-escaped, a trailing newline), without reflection:
// the answer of every session.
func appendSession(b []byte, s *payments.Session) ([]byte, error) {
	optional := func(key string, v *string) {
		b = append(b, key...)
		if v == nil {
			b = append(b, "null"...)
		} else {
			b = jsonenc.AppendString(b, *v)
		}
	}
	b = append(b, `{"transactionId":`...)
	b = jsonenc.AppendString(b, s.TransactionID)
	b = append(b, `,"sessionId":`...)
	b = jsonenc.AppendString(b, s.SessionID)
	b = append(b, `,"providerKey":`...)
	b = jsonenc.AppendString(b, s.ProviderKey)
	optional(`,"clientSecret":`, s.ClientSecret)
	optional(`,"redirectUrl":`, s.RedirectURL)
	b = append(b, `,"providerData":`...)
	b, err := jsonenc.AppendObject(b, s.ProviderData)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"status":`...)
	b = jsonenc.AppendString(b, string(s.Status))
	b = append(b, `,"paymentId":`...)
	b = jsonenc.AppendString(b, s.PaymentID)
	return append(b, "}\n"...), nil
}

func (h paymentHandlers) capture(w http.ResponseWriter, r *http.Request) error {
	in, err := decodePayment[payments.CaptureRequest](r)
	if err != nil {
		return paymentError(err)
	}
	out, err := h.svc.Capture(r.Context(), in)
	if err != nil {
		return paymentError(err)
	}
	return apikit.Encode(w, http.StatusOK, out)
}

func (h paymentHandlers) refund(w http.ResponseWriter, r *http.Request) error {
	in, err := decodePayment[payments.RefundRequest](r)
	if err != nil {
		return paymentError(err)
	}
	out, err := h.svc.Refund(r.Context(), in)
	if err != nil {
		return paymentError(err)
	}
	return apikit.Encode(w, http.StatusOK, out)
}

func (h paymentHandlers) cancel(w http.ResponseWriter, r *http.Request) error {
	in, err := decodePayment[payments.CancelRequest](r)
	if err != nil {
		return paymentError(err)
	}
	out, err := h.svc.Cancel(r.Context(), in)
	if err != nil {
		return paymentError(err)
	}
	return apikit.Encode(w, http.StatusOK, out)
}

func (h paymentHandlers) status(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("transactionId")
	switch {
	case id == "":
		return store.Errorf(store.ErrInvalid, "transactionId is required")
	case !store.IsID(id):
		return store.Errorf(store.ErrInvalid, "Invalid transactionId")
	}
	v, err := h.svc.Status(r.Context(), id)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, v)
}

func (h paymentHandlers) refresh(w http.ResponseWriter, r *http.Request) error {
	in, err := decodePayment[payments.RefreshRequest](r)
	if err != nil {
		return paymentError(err)
	}
	v, err := h.svc.Refresh(r.Context(), in)
	if err != nil {
		return paymentError(err)
	}
	return apikit.Encode(w, http.StatusOK, v)
}

func (h paymentHandlers) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.ParsePage(q, 20, 100)
	if err != nil {
		return err
	}
	items, total, err := h.svc.List(r.Context(), payments.Filter{Status: payments.Status(q.Get("status")),
		ProviderKey: q.Get("providerKey"), Limit: p.PageSize, Offset: p.Offset()})
	if err != nil {
		return err
	}
	out := make([]paymentTransaction, len(items))
	for i, t := range items {
		out[i] = toPaymentTransaction(t)
	}
	return apikit.Encode(w, http.StatusOK, apikit.NewPage(out, total, p))
}

// paymentTransactionFields is payments.Transaction without its
// MarshalJSON: its declared fields.
type paymentTransactionFields payments.Transaction

// paymentTransaction is a payment as the API shows it: what
// (*payments.Transaction).MarshalJSON writes, the transaction's fields
// with its amounts as decimals and redirectUrl null when the provider gave
// none.
type paymentTransaction struct {
	*paymentTransactionFields
	Amount         json.Number `json:"amount" jsonschema:"type=number,exclusiveMinimum=0"`
	AmountReceived json.Number `json:"amountReceived" jsonschema:"type=number,minimum=0"`
	RefundedAmount json.Number `json:"refundedAmount" jsonschema:"type=number,minimum=0"`
	RedirectURL    *string     `json:"redirectUrl"`
}

func toPaymentTransaction(t *payments.Transaction) paymentTransaction {
	out := paymentTransaction{paymentTransactionFields: (*paymentTransactionFields)(t),
		Amount:         payments.FormatAmount(t.Amount, t.Currency),
		AmountReceived: payments.FormatAmount(t.CapturedAmount, t.Currency),
		RefundedAmount: payments.FormatAmount(t.RefundedAmount, t.Currency)}
	if t.RedirectURL != "" {
		out.RedirectURL = &t.RedirectURL
	}
	return out
}

// paymentRefundFields is payments.Refund without its MarshalJSON.
type paymentRefundFields payments.Refund

// paymentRefund is a refund as the API shows it: what
// (*payments.Refund).MarshalJSON writes, its amount as a decimal.
type paymentRefund struct {
	*paymentRefundFields
	Amount json.Number `json:"amount" jsonschema:"type=number,exclusiveMinimum=0"`
}

// paymentTransactionDetail is a payment with its refunds and webhook
// history: what (*payments.Detail).MarshalJSON writes.
type paymentTransactionDetail struct {
	paymentTransaction
	Refunds  []paymentRefund     `json:"refunds"`
	Webhooks []*payments.Webhook `json:"webhooks"`
}

func (h paymentHandlers) get(w http.ResponseWriter, r *http.Request) error {
	d, err := h.svc.GetDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := paymentTransactionDetail{paymentTransaction: toPaymentTransaction(d.Transaction),
		Refunds: make([]paymentRefund, len(d.Refunds)), Webhooks: d.Webhooks}
	for i, rf := range d.Refunds {
		out.Refunds[i] = paymentRefund{paymentRefundFields: (*paymentRefundFields)(rf), Amount: payments.FormatAmount(rf.Amount, rf.Currency)}
	}
	if out.Webhooks == nil {
		out.Webhooks = []*payments.Webhook{}
	}
	return apikit.Encode(w, http.StatusOK, out)
}

// paymentProvider is a provider sessions may use.
type paymentProvider struct {
	ProviderKey string `json:"providerKey"`
}

// paymentProviderList answers GET /payment_gateways/providers.
type paymentProviderList struct {
	Items []paymentProvider `json:"items"`
	Total int               `json:"total"`
}

func (h paymentHandlers) providers(w http.ResponseWriter, r *http.Request) error {
	items := []paymentProvider{}
	for _, key := range h.svc.Providers().Keys() {
		items = append(items, paymentProvider{key})
	}
	return apikit.Encode(w, http.StatusOK, paymentProviderList{Items: items, Total: len(items)})
}

// paymentWebhookAccepted answers a provider's webhook: received, and
// queued for processing.
type paymentWebhookAccepted struct {
	Received bool `json:"received"`
	Queued   bool `json:"queued"`
}

func (h paymentHandlers) webhook(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body) // bounded by the route's MaxBodyBytes
	if err != nil {
		return apikit.DecodeError(err)
	}
	_, err = h.svc.Receive(r.Context(), r.PathValue("provider"), r.Header, body)
	switch {
	case errors.Is(err, payments.ErrUnknownProvider):
		return store.Errorf(store.ErrNotFound, "%s", unwrapMessage(err))
	case errors.Is(err, payments.ErrVerification):
		return &apikit.StatusError{Status: http.StatusUnauthorized, Message: "Webhook verification failed", Err: err}
	case err != nil:
		return err
	}
	return apikit.Encode(w, http.StatusAccepted, paymentWebhookAccepted{Received: true, Queued: true})
}
