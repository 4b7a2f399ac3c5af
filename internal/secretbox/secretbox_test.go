package secretbox

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	master := bytes.Repeat([]byte{7}, 32)
	box, err := New(master, "webhooks")
	if err != nil {
		t.Fatal(err)
	}
	sealed := box.Seal("whsec_secret")
	if strings.Contains(sealed, "whsec") || !strings.HasPrefix(sealed, "v1:") {
		t.Fatalf("sealed value %q shows the secret or lacks the version", sealed)
	}
	if again := box.Seal("whsec_secret"); again == sealed {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	if got, err := box.Open(sealed); err != nil || got != "whsec_secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := New(master, "integrations")
	otherKey, _ := New(bytes.Repeat([]byte{8}, 32), "webhooks")
	tampered := sealed[:len(sealed)-2] + "AA"
	for name, open := range map[string]func() (string, error){
		"another purpose": func() (string, error) { return other.Open(sealed) },
		"another key":     func() (string, error) { return otherKey.Open(sealed) },
		"altered":         func() (string, error) { return box.Open(tampered) },
		"no prefix":       func() (string, error) { return box.Open(strings.TrimPrefix(sealed, "v1:")) },
		"not base64":      func() (string, error) { return box.Open("v1:***") },
		"too short":       func() (string, error) { return box.Open("v1:AAAA") },
	} {
		if _, err := open(); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}
	if _, err := New(master[:31], "webhooks"); err == nil {
		t.Error("a 31-byte master key was accepted")
	}
}
