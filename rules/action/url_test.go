package action_test

import (
	"errors"
	"testing"

	"github.com/tenantkit/tenantkit/rules/action"
)

// privateTargets are CALL_WEBHOOK urls that reach a non-public address,
// some in forms a plain address parse misses.
var privateTargets = []string{
	"http://127.0.0.1:8080/hook", "http://localhost/h", "http://localhost../h", "http://127.1/h", "http://0x7f.1/h",
	"http://0177.0.0.1/h", "http://127.000.000.001/h", "http://１２７.０.０.１/h", "http://[::ffff:127.0.0.1]/h",
	"http://[64:ff9b::7f00:1]/h", "http://[::127.0.0.1]/h", "http://[2002:7f00:1::1]/h", "http://0xa9fea9fe/latest",
	"http://receiver/h", "http://127.1/orders/{{entityId}}?t={{data.total}}",
}

func validateURL(t *testing.T, u string, opts action.Options) error {
	t.Helper()
	return action.ValidateWith(decodeActions(t, one("CALL_WEBHOOK", `{"url":`+mustJSON(t, u)+`}`)), opts)
}

func TestValidateWebhookPrivateTargets(t *testing.T) {
	for _, u := range privateTargets {
		err := validateURL(t, u, action.Options{})
		var ae *action.Error
		if !errors.As(err, &ae) || ae.Path != "[0].config.url" || ae.Message != "must not target a private, loopback or link-local address" {
			t.Errorf("ValidateWith(%q) = %v, want a private-target error at [0].config.url", u, err)
		}
		// Allowed with the opt-in, and by Validate, which leaves private
		// targets to the connection check.
		if err := validateURL(t, u, action.Options{AllowPrivateURLs: true}); err != nil {
			t.Errorf("ValidateWith(%q, allow private) = %v", u, err)
		}
		accept(t, one("CALL_WEBHOOK", `{"url":`+mustJSON(t, u)+`}`))
	}
	// A host with a placeholder is checked once resolved; public hosts pass.
	for _, u := range []string{
		"https://{{tenant.domain}}/hooks", "http://{{host}}:8080/x", "{{data.callback}}", "https://hooks.example.com/{{entityId}}",
		"http://8.8.8.8/h", "http://[2606:4700:4700::1111]/h", "https://bücher.example/h",
	} {
		if err := validateURL(t, u, action.Options{}); err != nil {
			t.Errorf("ValidateWith(%q) = %v, want nil", u, err)
		}
	}
}

// A host that ends in a number but is no IPv4 address, or is not a valid
// name, is refused however private targets are treated.
func TestValidateWebhookMalformedHosts(t *testing.T) {
	for _, u := range []string{
		"http://0x7f.1.2.3.4/h", "http://256.0.0.1/h", "http://example.123/h", "http://08.0.0.1/h", "http://4294967296/h",
		"http://[zz::1]/h", "http://exa\u200dmple.ｃom/h",
	} {
		refuse(t, one("CALL_WEBHOOK", `{"url":`+mustJSON(t, u)+`}`), "[0].config.url")
		if err := validateURL(t, u, action.Options{}); err == nil {
			t.Errorf("ValidateWith(%q) = nil", u)
		}
	}
}
