package stripeprovider

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/stripe/stripe-go/v82"

	"github.com/tenantkit/tenantkit/payments"
)

// startStripeMock runs the stripe-mock binary from PATH on a free loopback
// port and returns its base URL; the test is skipped when it is not
// installed (.ci/run installs it).
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("stripe-mock")
	if err != nil {
		t.Skip("stripe-mock is not on PATH: skipping the request-shape test against it " +
			"(go install github.com/stripe/stripe-mock@v0.203.0 and put $(go env GOPATH)/bin on PATH)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	var out strings.Builder
	cmd := exec.Command(bin, "-http-addr", addr)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting stripe-mock: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("stripe-mock exited before it listened (%v): %s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock did not listen on %s within 30s: %s", addr, out.String())
		}
	}
}

// TestStripeMock checks the requests' shapes against stripe-mock, which
// validates every parameter against Stripe's OpenAPI spec (an unknown
// parameter, or a refund reason outside Stripe's enumeration, is a 400,
// and so a failed call here) and answers fixtures: it is stateless, so
// each call is checked on its own.
func TestStripeMock(t *testing.T) {
	t.Parallel()
	base := startStripeMock(t)
	is := is.New(t)
	p := New(Options{URL: base, Timeout: 20 * time.Second, MaxNetworkRetries: stripe.Int64(0)})
	ctx := context.Background()
	creds := payments.Credentials{CredSecretKey: "sk_test_123", CredPublishableKey: "pk_test_123"}

	for _, method := range []string{payments.CaptureAutomatic, payments.CaptureManual} {
		res, err := p.CreateSession(ctx, payments.SessionInput{
			TransactionID: "txn_mock_" + method, Amount: 1050, Currency: "USD", CaptureMethod: method,
			Description: "stripe-mock " + method, Metadata: map[string]any{"order": 7, "tags": []string{"a", "b"}},
			Credentials: creds, IdempotencyKey: fmt.Sprintf("idem-%s-%d", method, time.Now().UnixNano()),
		})
		is.NoErr(err)
		is.True(strings.HasPrefix(res.SessionID, "pi_"))
		is.True(res.ClientSecret != "")
		is.Equal(res.GatewayStatus, "requires_payment_method")
		is.Equal(res.Status, payments.StatusPending)
		is.Equal(res.ProviderData["paymentIntentId"], res.SessionID)
		is.Equal(res.ProviderData["publishableKey"], "pk_test_123")
	}

	const pi = "pi_mock123"
	capRes, err := p.Capture(ctx, payments.CaptureInput{SessionID: pi, Amount: 500, Currency: "USD", Credentials: creds, IdempotencyKey: "idem-capture"})
	is.NoErr(err)
	is.True(capRes.GatewayStatus != "")
	is.True(capRes.CapturedAmount >= 0)

	ref, err := p.Refund(ctx, payments.RefundInput{SessionID: pi, Amount: 200, Currency: "USD", Reason: "fraud", Credentials: creds, IdempotencyKey: "idem-refund"})
	is.NoErr(err)
	is.True(strings.HasPrefix(ref.RefundID, "re_"))
	is.True(ref.GatewayStatus != "")

	// A whole refund: no amount, no reason.
	_, err = p.Refund(ctx, payments.RefundInput{SessionID: pi, Credentials: creds})
	is.NoErr(err)

	can, err := p.Cancel(ctx, payments.CancelInput{SessionID: pi, Credentials: creds, IdempotencyKey: "idem-cancel"})
	is.NoErr(err)
	is.True(can.GatewayStatus != "")

	st, err := p.Status(ctx, payments.StatusInput{SessionID: pi, Credentials: creds})
	is.NoErr(err)
	is.True(st.GatewayStatus != "")
	is.Equal(st.Status, p.MapStatus(st.GatewayStatus, ""))
	is.True(st.Amount > 0)
}
