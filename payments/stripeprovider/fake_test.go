package stripeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"
)

// fakeStripe is a small stateful stripe.Backend: PaymentIntents and refunds
// in memory, Stripe's idempotent replay, and a record of every call's
// idempotency key and form parameters.
type fakeStripe struct {
	mu      sync.Mutex
	key     string // the one secret key it accepts
	seq     int
	intents map[string]*fakeIntent
	refunds map[string]*fakeRefund
	replies map[string]fakeReply // by idempotency key
	calls   []fakeCall
	failing error // returned by the next call, when set
}

type fakeIntent struct {
	ID, Currency, CaptureMethod, Status, Description string
	Amount, AmountCapturable, AmountReceived         int64
	AmountRefunded                                   int64
	Metadata                                         map[string]string
}

type fakeRefund struct {
	ID, PaymentIntent, Reason, Status string
	Amount                            int64
}

type fakeReply struct {
	body []byte
	err  error
}

type fakeCall struct {
	Method, Path, IdempotencyKey string
	Form                         url.Values
}

func newFakeStripe(key string) *fakeStripe {
	return &fakeStripe{key: key, intents: map[string]*fakeIntent{}, refunds: map[string]*fakeRefund{}, replies: map[string]fakeReply{}}
}

var _ stripe.Backend = (*fakeStripe)(nil)

func stripeErr(status int, typ stripe.ErrorType, code stripe.ErrorCode, format string, args ...any) *stripe.Error {
	return &stripe.Error{HTTPStatusCode: status, Type: typ, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Call serves the few endpoints the provider uses.
func (f *fakeStripe) Call(method, path, key string, params stripe.ParamsContainer, v stripe.LastResponseSetter) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	vals := url.Values{}
	idem := ""
	if params != nil && !reflect.ValueOf(params).IsNil() {
		fv := &form.Values{}
		form.AppendTo(fv, params)
		vals = fv.ToValues()
		if p := params.GetParams(); p.IdempotencyKey != nil {
			idem = *p.IdempotencyKey
		}
	}
	f.calls = append(f.calls, fakeCall{Method: method, Path: path, IdempotencyKey: idem, Form: vals})
	if f.failing != nil {
		err := f.failing
		f.failing = nil
		return err
	}
	if key != f.key {
		return stripeErr(http.StatusUnauthorized, stripe.ErrorTypeInvalidRequest, "",
			"Invalid API Key provided: %s", maskKey(key))
	}
	if r, ok := f.replies[idem]; ok && idem != "" {
		if r.err != nil {
			return r.err
		}
		return json.Unmarshal(r.body, v)
	}
	obj, err := f.route(method, path, vals)
	var body []byte
	if err == nil {
		body, err = json.Marshal(obj)
	}
	if idem != "" {
		f.replies[idem] = fakeReply{body: body, err: err}
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

func maskKey(k string) string {
	if len(k) <= 4 {
		return "****"
	}
	return "sk_****" + k[len(k)-4:]
}

func (f *fakeStripe) route(method, path string, vals url.Values) (any, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case method == http.MethodPost && path == "/v1/payment_intents":
		return f.createIntent(vals)
	case method == http.MethodPost && path == "/v1/refunds":
		return f.createRefund(vals)
	case len(parts) >= 3 && parts[1] == "payment_intents":
		pi, ok := f.intents[parts[2]]
		if !ok {
			return nil, stripeErr(http.StatusNotFound, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeResourceMissing,
				"No such payment_intent: '%s'", parts[2])
		}
		switch {
		case method == http.MethodGet && len(parts) == 3:
			return intentJSON(pi), nil
		case method == http.MethodPost && len(parts) == 4 && parts[3] == "capture":
			return f.capture(pi, vals)
		case method == http.MethodPost && len(parts) == 4 && parts[3] == "cancel":
			return f.cancel(pi)
		}
	}
	return nil, stripeErr(http.StatusNotFound, stripe.ErrorTypeInvalidRequest, "", "Unrecognized request URL (%s: %s)", method, path)
}

func (f *fakeStripe) createIntent(vals url.Values) (any, error) {
	var amount int64
	if _, err := fmt.Sscan(vals.Get("amount"), &amount); err != nil || amount <= 0 {
		return nil, stripeErr(http.StatusBadRequest, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeParameterInvalidInteger,
			"Invalid positive integer")
	}
	if amount > 99999999 {
		return nil, stripeErr(http.StatusBadRequest, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeAmountTooLarge,
			"Amount must be no more than $999,999.99")
	}
	f.seq++
	pi := &fakeIntent{
		ID: fmt.Sprintf("pi_fake%d", f.seq), Amount: amount, Currency: vals.Get("currency"),
		CaptureMethod: vals.Get("capture_method"), Description: vals.Get("description"),
		Status: "requires_payment_method", Metadata: map[string]string{},
	}
	for k, vs := range vals {
		if strings.HasPrefix(k, "metadata[") && strings.HasSuffix(k, "]") {
			pi.Metadata[k[len("metadata["):len(k)-1]] = vs[0]
		}
	}
	f.intents[pi.ID] = pi
	return intentJSON(pi), nil
}

// confirm is the customer paying: what the client does with the client
// secret.
func (f *fakeStripe) confirm(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := f.intents[id]
	if pi.CaptureMethod == "manual" {
		pi.Status, pi.AmountCapturable = "requires_capture", pi.Amount
		return
	}
	pi.Status, pi.AmountReceived = "succeeded", pi.Amount
}

func unexpectedState(pi *fakeIntent, action string) error {
	return stripeErr(http.StatusBadRequest, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodePaymentIntentUnexpectedState,
		"This PaymentIntent could not be %s because it has a status of %s.", action, pi.Status)
}

func (f *fakeStripe) capture(pi *fakeIntent, vals url.Values) (any, error) {
	if pi.Status != "requires_capture" {
		return nil, unexpectedState(pi, "captured")
	}
	amount := pi.AmountCapturable
	if s := vals.Get("amount_to_capture"); s != "" {
		fmt.Sscan(s, &amount)
	}
	if amount > pi.AmountCapturable {
		return nil, stripeErr(http.StatusBadRequest, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeAmountTooLarge,
			"The amount to capture (%d) is greater than the amount capturable (%d).", amount, pi.AmountCapturable)
	}
	pi.AmountReceived, pi.AmountCapturable, pi.Status = amount, 0, "succeeded"
	return intentJSON(pi), nil
}

func (f *fakeStripe) cancel(pi *fakeIntent) (any, error) {
	switch pi.Status {
	case "succeeded", "canceled":
		return nil, unexpectedState(pi, "canceled")
	}
	pi.Status, pi.AmountCapturable = "canceled", 0
	return intentJSON(pi), nil
}

func (f *fakeStripe) createRefund(vals url.Values) (any, error) {
	pi, ok := f.intents[vals.Get("payment_intent")]
	if !ok {
		return nil, stripeErr(http.StatusNotFound, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeResourceMissing,
			"No such payment_intent: '%s'", vals.Get("payment_intent"))
	}
	if pi.Status != "succeeded" {
		return nil, unexpectedState(pi, "refunded")
	}
	remaining := pi.AmountReceived - pi.AmountRefunded
	amount := remaining
	if s := vals.Get("amount"); s != "" {
		fmt.Sscan(s, &amount)
	}
	if remaining == 0 {
		return nil, stripeErr(http.StatusBadRequest, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeChargeAlreadyRefunded,
			"Charge for %s has already been refunded.", pi.ID)
	}
	if amount > remaining {
		return nil, stripeErr(http.StatusBadRequest, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeAmountTooLarge,
			"Refund amount (%d) is greater than unrefunded amount on charge (%d)", amount, remaining)
	}
	switch vals.Get("reason") {
	case "", "duplicate", "fraudulent", "requested_by_customer":
	default:
		return nil, stripeErr(http.StatusBadRequest, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeParameterInvalidEmpty,
			"Invalid reason: %s", vals.Get("reason"))
	}
	f.seq++
	r := &fakeRefund{ID: fmt.Sprintf("re_fake%d", f.seq), PaymentIntent: pi.ID, Reason: vals.Get("reason"), Status: "succeeded", Amount: amount}
	f.refunds[r.ID] = r
	pi.AmountRefunded += amount
	return map[string]any{"id": r.ID, "object": "refund", "amount": r.Amount, "payment_intent": r.PaymentIntent,
		"reason": r.Reason, "status": r.Status, "currency": pi.Currency}, nil
}

func intentJSON(pi *fakeIntent) map[string]any {
	return map[string]any{
		"id": pi.ID, "object": "payment_intent", "amount": pi.Amount, "amount_capturable": pi.AmountCapturable,
		"amount_received": pi.AmountReceived, "currency": pi.Currency, "capture_method": pi.CaptureMethod,
		"client_secret": pi.ID + "_secret_fake", "description": pi.Description, "metadata": pi.Metadata, "status": pi.Status,
	}
}

// lastCall returns the last call made, and how many there were.
func (f *fakeStripe) lastCall() (fakeCall, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1], len(f.calls)
}

func (f *fakeStripe) refundTotal(piID string) (n int, total int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.refunds {
		if r.PaymentIntent == piID {
			n++
			total += r.Amount
		}
	}
	return n, total
}

func (f *fakeStripe) failNext(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = err
}

func (f *fakeStripe) CallStreaming(method, path, key string, params stripe.ParamsContainer, v stripe.StreamingLastResponseSetter) error {
	return fmt.Errorf("fake stripe: streaming %s %s not supported", method, path)
}

func (f *fakeStripe) CallRaw(method, path, key string, body []byte, params *stripe.Params, v stripe.LastResponseSetter) error {
	return fmt.Errorf("fake stripe: raw %s %s not supported", method, path)
}

func (f *fakeStripe) CallMultipart(method, path, key, boundary string, body *bytes.Buffer, params *stripe.Params, v stripe.LastResponseSetter) error {
	return fmt.Errorf("fake stripe: multipart %s %s not supported", method, path)
}

func (f *fakeStripe) SetMaxNetworkRetries(int64) {}
