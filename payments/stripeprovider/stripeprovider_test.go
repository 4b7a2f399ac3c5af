package stripeprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/stripe/stripe-go/v82"

	"github.com/tenantkit/tenantkit/payments"
)

const testKey = "sk_test_tenantA_0123456789"

func tenantCreds() payments.Credentials {
	return payments.Credentials{
		CredSecretKey:      testKey,
		CredPublishableKey: "pk_test_tenantA",
		CredWebhookSecret:  "whsec_tenantA",
	}
}

func newFake(t *testing.T) (*Provider, *fakeStripe) {
	t.Helper()
	f := newFakeStripe(testKey)
	return New(Options{Backend: f}), f
}

func TestKey(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	is.Equal(New(Options{}).Key(), "stripe")
}

func TestCreateSessionShape(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p, f := newFake(t)
	ctx := context.Background()

	res, err := p.CreateSession(ctx, payments.SessionInput{
		TransactionID: "txn_1", Amount: 1050, Currency: "EUR", CaptureMethod: payments.CaptureManual,
		Description: "Order 42", Metadata: map[string]any{"order": 42, "note": "hi"},
		Credentials: tenantCreds(), IdempotencyKey: "idem-create-1",
	})
	is.NoErr(err)
	call, _ := f.lastCall()
	is.Equal(call.Method, http.MethodPost)
	is.Equal(call.Path, "/v1/payment_intents")
	is.Equal(call.IdempotencyKey, "idem-create-1")
	is.Equal(call.Form.Get("amount"), "1050")
	is.Equal(call.Form.Get("currency"), "eur")
	is.Equal(call.Form.Get("capture_method"), "manual")
	is.Equal(call.Form.Get("description"), "Order 42")
	is.Equal(call.Form.Get("automatic_payment_methods[enabled]"), "true")
	is.Equal(call.Form.Get("metadata[transactionId]"), "txn_1")
	is.Equal(call.Form.Get("metadata[order]"), "42")
	is.Equal(call.Form.Get("metadata[note]"), "hi")

	is.True(strings.HasPrefix(res.SessionID, "pi_"))
	is.Equal(res.ClientSecret, res.SessionID+"_secret_fake")
	is.Equal(res.Status, payments.StatusPending)
	is.Equal(res.GatewayStatus, "requires_payment_method")
	is.Equal(res.ProviderData, map[string]any{"paymentIntentId": res.SessionID, "publishableKey": "pk_test_tenantA"})

	// Automatic capture; no idempotency key: the transaction id is used;
	// no publishable key: none is shown.
	creds := tenantCreds()
	delete(creds, CredPublishableKey)
	res, err = p.CreateSession(ctx, payments.SessionInput{
		TransactionID: "txn_2", Amount: 500, Currency: "usd", CaptureMethod: payments.CaptureAutomatic, Credentials: creds,
	})
	is.NoErr(err)
	call, _ = f.lastCall()
	is.Equal(call.IdempotencyKey, "txn_2")
	is.Equal(call.Form.Get("capture_method"), "automatic")
	is.Equal(call.Form.Get("description"), "")
	is.Equal(res.ProviderData, map[string]any{"paymentIntentId": res.SessionID})

	_, err = p.CreateSession(ctx, payments.SessionInput{Amount: 1, Currency: "usd", CaptureMethod: "later", Credentials: creds})
	is.True(err != nil) // an unknown capture method
}

func TestManualCaptureFlow(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p, f := newFake(t)
	ctx := context.Background()
	creds := tenantCreds()

	res, err := p.CreateSession(ctx, payments.SessionInput{TransactionID: "txn_m", Amount: 2000, Currency: "USD",
		CaptureMethod: payments.CaptureManual, Credentials: creds, IdempotencyKey: "k-create"})
	is.NoErr(err)
	id := res.SessionID

	// Capturing before the customer paid: Stripe's unexpected state.
	_, err = p.Capture(ctx, payments.CaptureInput{SessionID: id, Amount: 2000, Credentials: creds, IdempotencyKey: "k-early"})
	is.True(errors.Is(err, payments.ErrDeclined))
	is.True(strings.Contains(err.Error(), "status of requires_payment_method"))

	f.confirm(id)
	st, err := p.Status(ctx, payments.StatusInput{SessionID: id, Credentials: creds})
	is.NoErr(err)
	is.Equal(*st, payments.StatusResult{Status: payments.StatusAuthorized, GatewayStatus: "requires_capture", Amount: 2000})

	// Capturing more than authorized is declined; a partial capture works.
	_, err = p.Capture(ctx, payments.CaptureInput{SessionID: id, Amount: 2001, Credentials: creds, IdempotencyKey: "k-cap-big"})
	is.True(errors.Is(err, payments.ErrDeclined))
	cap, err := p.Capture(ctx, payments.CaptureInput{SessionID: id, Amount: 1500, Currency: "USD", Credentials: creds, IdempotencyKey: "k-cap"})
	is.NoErr(err)
	call, _ := f.lastCall()
	is.Equal(call.Path, "/v1/payment_intents/"+id+"/capture")
	is.Equal(call.Form.Get("amount_to_capture"), "1500")
	is.Equal(call.IdempotencyKey, "k-cap")
	is.Equal(cap.CapturedAmount, int64(1500))
	is.Equal(cap.GatewayStatus, "succeeded")
	is.Equal(cap.ProviderData["paymentIntentId"], id)

	st, err = p.Status(ctx, payments.StatusInput{SessionID: id, Credentials: creds})
	is.NoErr(err)
	// Succeeded with less than its amount received: a partial capture.
	is.Equal(*st, payments.StatusResult{Status: payments.StatusPartiallyCaptured, GatewayStatus: "succeeded", Amount: 2000, AmountReceived: 1500})

	// Cancelling a captured payment is declined.
	_, err = p.Cancel(ctx, payments.CancelInput{SessionID: id, Credentials: creds, IdempotencyKey: "k-cancel"})
	is.True(errors.Is(err, payments.ErrDeclined))
}

func TestCancel(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p, f := newFake(t)
	ctx := context.Background()
	creds := tenantCreds()
	res, err := p.CreateSession(ctx, payments.SessionInput{TransactionID: "txn_c", Amount: 700, Currency: "GBP",
		CaptureMethod: payments.CaptureManual, Credentials: creds})
	is.NoErr(err)
	f.confirm(res.SessionID)
	c, err := p.Cancel(ctx, payments.CancelInput{SessionID: res.SessionID, Credentials: creds, IdempotencyKey: "k-cancel"})
	is.NoErr(err)
	is.Equal(c.GatewayStatus, "canceled")
	call, _ := f.lastCall()
	is.Equal(call.Path, "/v1/payment_intents/"+res.SessionID+"/cancel")
	is.Equal(call.IdempotencyKey, "k-cancel")
	st, err := p.Status(ctx, payments.StatusInput{SessionID: res.SessionID, Credentials: creds})
	is.NoErr(err)
	is.Equal(st.Status, payments.StatusCancelled)

	// No such payment intent: Stripe's 404 is a refusal with its message.
	_, err = p.Status(ctx, payments.StatusInput{SessionID: "pi_missing", Credentials: creds})
	is.True(errors.Is(err, payments.ErrDeclined))
	is.True(strings.Contains(err.Error(), "No such payment_intent"))
}

func TestPartialRefunds(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p, f := newFake(t)
	ctx := context.Background()
	creds := tenantCreds()
	res, err := p.CreateSession(ctx, payments.SessionInput{TransactionID: "txn_r", Amount: 1000, Currency: "USD",
		CaptureMethod: payments.CaptureAutomatic, Credentials: creds})
	is.NoErr(err)
	id := res.SessionID
	f.confirm(id)

	r1, err := p.Refund(ctx, payments.RefundInput{SessionID: id, Amount: 300, Currency: "USD", Reason: "Duplicate",
		Credentials: creds, IdempotencyKey: "k-ref-1"})
	is.NoErr(err)
	call, _ := f.lastCall()
	is.Equal(call.Path, "/v1/refunds")
	is.Equal(call.IdempotencyKey, "k-ref-1")
	is.Equal(call.Form.Get("payment_intent"), id)
	is.Equal(call.Form.Get("amount"), "300")
	is.Equal(call.Form.Get("reason"), "duplicate")
	is.True(strings.HasPrefix(r1.RefundID, "re_"))
	is.Equal(r1.GatewayStatus, "succeeded")
	is.Equal(r1.ProviderData, map[string]any{"refundId": r1.RefundID, "paymentIntentId": id})

	// The same idempotency key again: Stripe answers the first refund and
	// refunds nothing more.
	again, err := p.Refund(ctx, payments.RefundInput{SessionID: id, Amount: 300, Reason: "Duplicate",
		Credentials: creds, IdempotencyKey: "k-ref-1"})
	is.NoErr(err)
	is.Equal(again.RefundID, r1.RefundID)
	n, total := f.refundTotal(id)
	is.Equal(n, 1)
	is.Equal(total, int64(300))

	r2, err := p.Refund(ctx, payments.RefundInput{SessionID: id, Amount: 600, Reason: "fraud", Credentials: creds, IdempotencyKey: "k-ref-2"})
	is.NoErr(err)
	is.True(r2.RefundID != r1.RefundID)
	call, _ = f.lastCall()
	is.Equal(call.Form.Get("reason"), "fraudulent")

	// 900 of 1000 refunded: 200 more is beyond what was captured.
	_, err = p.Refund(ctx, payments.RefundInput{SessionID: id, Amount: 200, Credentials: creds, IdempotencyKey: "k-ref-3"})
	is.True(errors.Is(err, payments.ErrDeclined))
	is.True(strings.Contains(err.Error(), "greater than unrefunded amount"))
	var se *stripe.Error
	is.True(errors.As(err, &se))
	is.Equal(se.Code, stripe.ErrorCodeAmountTooLarge)
	call, _ = f.lastCall()
	is.Equal(call.Form.Get("reason"), "requested_by_customer") // no reason given

	_, err = p.Refund(ctx, payments.RefundInput{SessionID: id, Amount: 100, Reason: "changed mind", Credentials: creds, IdempotencyKey: "k-ref-4"})
	is.NoErr(err)
	call, _ = f.lastCall()
	is.Equal(call.Form.Get("reason"), "requested_by_customer")
	n, total = f.refundTotal(id)
	is.Equal(n, 3)
	is.Equal(total, int64(1000))
}

func TestRefundReason(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"duplicate": "duplicate", " DUPLICATE ": "duplicate", "fraud": "fraudulent", "fraudulent": "fraudulent",
		"Fraud": "fraudulent", "": "requested_by_customer", "requested_by_customer": "requested_by_customer",
		"the customer asked": "requested_by_customer", "duplicated": "requested_by_customer",
	} {
		if got := RefundReason(in); got != want {
			t.Errorf("RefundReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p, f := newFake(t)
	ctx := context.Background()
	in := payments.SessionInput{TransactionID: "txn_e", Amount: 100, Currency: "USD", Credentials: tenantCreds()}

	// No secret key: not configured, and Stripe is not called.
	_, err := p.CreateSession(ctx, payments.SessionInput{Amount: 100, Currency: "USD", Credentials: payments.Credentials{CredPublishableKey: "pk_x"}})
	is.True(errors.Is(err, payments.ErrNotConfigured))
	is.Equal(len(f.calls), 0)
	_, err = p.Status(ctx, payments.StatusInput{SessionID: "pi_1"})
	is.True(errors.Is(err, payments.ErrNotConfigured))

	// A key Stripe refuses: not configured, and the message does not echo
	// the key.
	bad := payments.Credentials{CredSecretKey: "sk_test_wrong_key_9999"}
	_, err = p.CreateSession(ctx, payments.SessionInput{TransactionID: "t", Amount: 100, Currency: "USD", Credentials: bad})
	is.True(errors.Is(err, payments.ErrNotConfigured))
	is.True(!errors.Is(err, payments.ErrDeclined))
	is.True(!strings.Contains(err.Error(), "9999"))
	_, err = p.Refund(ctx, payments.RefundInput{SessionID: "pi_1", Amount: 1, Credentials: bad})
	is.True(errors.Is(err, payments.ErrNotConfigured))

	// An amount over Stripe's limit: declined with Stripe's message.
	_, err = p.CreateSession(ctx, payments.SessionInput{TransactionID: "t2", Amount: 100_000_000, Currency: "USD", Credentials: tenantCreds()})
	is.True(errors.Is(err, payments.ErrDeclined))
	is.Equal(err.Error(), "payments: declined by the provider: Amount must be no more than $999,999.99")

	// A card error: declined.
	f.failNext(stripeErr(http.StatusPaymentRequired, stripe.ErrorTypeCard, stripe.ErrorCodeCardDeclined, "Your card was declined."))
	_, err = p.CreateSession(ctx, in)
	is.True(errors.Is(err, payments.ErrDeclined))
	is.True(strings.Contains(err.Error(), "Your card was declined."))

	// Stripe's 5xx, a rate limit and an idempotency conflict: plain errors.
	for _, se := range []*stripe.Error{
		stripeErr(http.StatusInternalServerError, stripe.ErrorTypeAPI, "", "Something went wrong"),
		stripeErr(http.StatusTooManyRequests, stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeRateLimit, "Too many requests"),
		stripeErr(http.StatusConflict, stripe.ErrorTypeIdempotency, stripe.ErrorCodeIdempotencyKeyInUse, "Keys for idempotent requests can only be used with the same parameters"),
	} {
		f.failNext(se)
		_, err = p.CreateSession(ctx, in)
		is.True(err != nil)
		is.True(!errors.Is(err, payments.ErrDeclined))
		is.True(!errors.Is(err, payments.ErrNotConfigured))
		var got *stripe.Error
		is.True(errors.As(err, &got))
		is.True(strings.Contains(err.Error(), se.Msg))
	}

	// A network error: plain.
	f.failNext(errors.New("connection reset by peer"))
	_, err = p.Capture(ctx, payments.CaptureInput{SessionID: "pi_1", Amount: 1, Credentials: tenantCreds()})
	is.True(err != nil)
	is.True(!errors.Is(err, payments.ErrDeclined))
	is.True(!errors.Is(err, payments.ErrNotConfigured))
	is.True(strings.Contains(err.Error(), "connection reset by peer"))
}

func TestErrorHidesObjects(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	// stripe-go's own error text is the whole error as JSON, a
	// PaymentIntent with its client secret included; ours is not.
	se := &stripe.Error{HTTPStatusCode: 500, Type: stripe.ErrorTypeAPI, Msg: "boom",
		PaymentIntent: &stripe.PaymentIntent{ID: "pi_1", ClientSecret: "pi_1_secret_abc"}}
	is.True(strings.Contains(se.Error(), "pi_1_secret_abc"))
	err := mapError("capture payment intent", se)
	is.True(!strings.Contains(err.Error(), "pi_1_secret_abc"))
	is.Equal(err.Error(), "stripe capture payment intent: boom (type api_error, code , HTTP 500, request )")
}

func TestMetadataLimits(t *testing.T) {
	t.Parallel()
	is := is.New(t)

	long := strings.Repeat("é", 600)
	meta := map[string]any{
		"transactionId":         "caller's, ignored",
		"":                      "empty key",
		strings.Repeat("k", 40): "forty",
		strings.Repeat("k", 41): "forty-one",
		"a[b]":                  "bracket",
		"nil":                   nil,
		"num":                   3.5,
		"bool":                  true,
		"obj":                   map[string]any{"x": []int{1, 2}},
		"long":                  long,
		"str":                   "plain",
		"int64":                 int64(9007199254740993),
	}
	got := Metadata("txn_9", meta)
	is.Equal(got, map[string]string{
		"transactionId":         "txn_9",
		strings.Repeat("k", 40): "forty",
		"num":                   "3.5",
		"bool":                  "true",
		"obj":                   `{"x":[1,2]}`,
		"long":                  strings.Repeat("é", 500),
		"str":                   "plain",
		"int64":                 "9007199254740993",
	})

	// Over 50 keys: transactionId and the first 49 caller keys in sorted
	// order, the same every time.
	many := map[string]any{}
	for i := range 80 {
		many[fmt.Sprintf("key%02d", i)] = i
	}
	got = Metadata("txn_9", many)
	is.Equal(len(got), 50)
	is.Equal(got["transactionId"], "txn_9")
	is.Equal(got["key48"], "48")
	_, has := got["key49"]
	is.True(!has)
	for range 5 {
		is.Equal(Metadata("txn_9", many), got)
	}

	is.Equal(Metadata("", nil), nil)
	is.Equal(len(Metadata("", many)), 50)
}

func TestLongIdempotencyKeyHashed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p, f := newFake(t)
	key := strings.Repeat("x", 300)
	_, err := p.CreateSession(context.Background(), payments.SessionInput{TransactionID: "t", Amount: 100, Currency: "USD",
		Credentials: tenantCreds(), IdempotencyKey: key})
	is.NoErr(err)
	call, _ := f.lastCall()
	is.Equal(len(call.IdempotencyKey), 64)
	_, err = p.CreateSession(context.Background(), payments.SessionInput{TransactionID: "t", Amount: 100, Currency: "USD",
		Credentials: tenantCreds(), IdempotencyKey: key})
	is.NoErr(err)
	call2, _ := f.lastCall()
	is.Equal(call2.IdempotencyKey, call.IdempotencyKey)
}

// TestHTTPBackend goes through stripe-go's real HTTP backend to a loopback
// server: each tenant's key is the request's bearer token, the idempotency
// key its header, and Stripe's JSON errors are classified.
func TestHTTPBackend(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	type seen struct {
		auth, idem, path string
		form             url.Values
	}
	var mu sync.Mutex
	var reqs []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		mu.Lock()
		reqs = append(reqs, seen{auth: r.Header.Get("Authorization"), idem: r.Header.Get("Idempotency-Key"), path: r.URL.Path, form: form})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.Header.Get("Authorization") {
		case "Bearer sk_test_unauthorized":
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_********ized"}}`)
		case "Bearer sk_test_broken":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"type":"api_error","message":"An unknown error occurred"}}`)
		default:
			io.WriteString(w, `{"id":"pi_http","object":"payment_intent","amount":1234,"amount_received":0,"currency":"eur","status":"requires_payment_method","client_secret":"pi_http_secret_x"}`)
		}
	}))
	t.Cleanup(srv.Close)
	p := New(Options{URL: srv.URL, MaxNetworkRetries: stripe.Int64(0), Timeout: 10 * time.Second})
	ctx := context.Background()

	for _, key := range []string{"sk_test_tenantA", "sk_test_tenantB"} {
		res, err := p.CreateSession(ctx, payments.SessionInput{TransactionID: "txn_h", Amount: 1234, Currency: "EUR",
			Credentials: payments.Credentials{CredSecretKey: key}, IdempotencyKey: "idem-" + key})
		is.NoErr(err)
		is.Equal(res.SessionID, "pi_http")
		is.Equal(res.ClientSecret, "pi_http_secret_x")
		is.Equal(res.Status, payments.StatusPending)
	}
	mu.Lock()
	is.Equal(len(reqs), 2)
	is.Equal(reqs[0].auth, "Bearer sk_test_tenantA")
	is.Equal(reqs[1].auth, "Bearer sk_test_tenantB")
	is.Equal(reqs[0].idem, "idem-sk_test_tenantA")
	is.Equal(reqs[0].path, "/v1/payment_intents")
	is.Equal(reqs[0].form.Get("currency"), "eur")
	is.Equal(reqs[0].form.Get("amount"), "1234")
	is.Equal(reqs[0].form.Get("metadata[transactionId]"), "txn_h")
	mu.Unlock()

	_, err := p.Status(ctx, payments.StatusInput{SessionID: "pi_http", Credentials: payments.Credentials{CredSecretKey: "sk_test_unauthorized"}})
	is.True(errors.Is(err, payments.ErrNotConfigured))
	_, err = p.Status(ctx, payments.StatusInput{SessionID: "pi_http", Credentials: payments.Credentials{CredSecretKey: "sk_test_broken"}})
	is.True(err != nil)
	is.True(!errors.Is(err, payments.ErrDeclined) && !errors.Is(err, payments.ErrNotConfigured))
	is.True(strings.Contains(err.Error(), "HTTP 500"))
}

// TestTimeout: a Stripe that never answers is given up on after the
// provider's timeout, as a plain error.
func TestTimeout(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	p := New(Options{URL: srv.URL, Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := p.Status(context.Background(), payments.StatusInput{SessionID: "pi_1", Credentials: tenantCreds()})
	is.True(err != nil)
	is.True(!errors.Is(err, payments.ErrDeclined) && !errors.Is(err, payments.ErrNotConfigured))
	is.True(time.Since(start) < 5*time.Second)
}
