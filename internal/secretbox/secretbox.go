// Package secretbox encrypts the small secrets areas keep at rest (webhook
// signing secrets, integration credentials): AES-256-GCM with a key
// derived by HKDF-SHA256 from the Kit's secret key and a purpose, so that
// no two purposes share a key and a secret sealed for one cannot be opened
// as another.
//
// A sealed value is text: "v1:" and the base64 of nonce and ciphertext.
// The version prefix leaves room for another scheme.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// ErrOpen is returned for a value that was not sealed by this box (another
// key or purpose, or altered).
var ErrOpen = errors.New("secretbox: cannot open the sealed value")

// Box seals and opens values for one purpose. It is safe for concurrent
// use.
type Box struct {
	aead cipher.AEAD
}

// New returns a box for purpose, keyed from master (at least 32 bytes).
func New(master []byte, purpose string) (*Box, error) {
	if len(master) < 32 {
		return nil, errors.New("secretbox: the master key must be at least 32 bytes")
	}
	key, err := hkdf.Key(sha256.New, master, nil, "tenantkit/"+purpose, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

const prefix = "v1:"

// Seal encrypts plaintext with a fresh random nonce.
func (b *Box) Seal(plaintext string) string {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("secretbox: no randomness: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return prefix + base64.RawStdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, []byte(plaintext), nil))
}

// Open decrypts a value Seal made with the same key and purpose.
func (b *Box) Open(sealed string) (string, error) {
	raw, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return "", ErrOpen
	}
	data, err := base64.RawStdEncoding.DecodeString(raw)
	if err != nil || len(data) < b.aead.NonceSize() {
		return "", ErrOpen
	}
	plain, err := b.aead.Open(nil, data[:b.aead.NonceSize()], data[b.aead.NonceSize():], nil)
	if err != nil {
		return "", ErrOpen
	}
	return string(plain), nil
}
