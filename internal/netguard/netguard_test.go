package netguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700::1111": true,
		"127.0.0.1": false, "127.5.5.5": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fc00::1": false, "0.0.0.0": false, "::": false, "100.64.0.1": false,
		"224.0.0.1": false, "255.255.255.255": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "198.18.0.1": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestClientRefusesLoopbackAndRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/target", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	_, err := Client(Options{}).Get(srv.URL)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("loopback target: err = %v, want ErrBlocked", err)
	}
	// With the opt-in it connects, and a redirect is returned, not followed.
	resp, err := Client(Options{AllowPrivate: true}).Get(srv.URL + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want the 302 itself", resp.StatusCode)
	}
}

func TestCheckHost(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "localhost", "169.254.169.254", "::1"} {
		if err := CheckHost(t.Context(), host); !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckHost(%q) = %v, want ErrBlocked", host, err)
		}
	}
	if err := CheckHost(t.Context(), "93.184.215.14"); err != nil {
		t.Errorf("public literal refused: %v", err)
	}
}
