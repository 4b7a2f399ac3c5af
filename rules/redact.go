package rules

import (
	"bytes"
	"strings"
	"unicode"
)

// Redacted replaces a secret in the execution log.
const Redacted = "[REDACTED]"

// maxRedactDepth is how deep Redact copies; deeper values are replaced by
// "[Max depth exceeded]".
const maxRedactDepth = 5

// secretKeyParts are the key fragments (lower case, without '_' and '-')
// that mark a value as secret: password, token, apiKey, card numbers and
// the like.
var secretKeyParts = []string{"password", "passwd", "pwd", "secret", "token", "apikey", "auth", "creditcard", "cardnumber",
	"cvv", "ssn", "socialsecurity", "taxid", "driverlicense", "passport"}

// Redact returns data for the execution log: values under secret-looking
// keys, and texts that look like payment card numbers (13 to 19 digits
// passing the Luhn check), are replaced by Redacted; objects nested deeper
// than 5 levels are cut off. It returns a copy when it changes anything,
// and data itself otherwise; it never modifies data.
func Redact(data map[string]any) map[string]any {
	if !needsRedaction(data, 0) {
		return data // nothing to hide: no copy
	}
	return redactMap(data, 0)
}

// needsRedaction reports whether Redact would change m; it walks m as
// redactMap and redactValue do, depth for depth.
func needsRedaction(m map[string]any, depth int) bool {
	for k, v := range m {
		if secretKey(k) || valueNeedsRedaction(v, depth+1) {
			return true
		}
	}
	return false
}

func valueNeedsRedaction(v any, depth int) bool {
	switch t := v.(type) {
	case map[string]any:
		return depth >= maxRedactDepth || needsRedaction(t, depth)
	case []any:
		if depth >= maxRedactDepth {
			return true
		}
		for _, e := range t {
			if valueNeedsRedaction(e, depth+1) {
				return true
			}
		}
	case string:
		return cardNumber(t)
	}
	return false
}

func redactMap(m map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if secretKey(k) {
			out[k] = Redacted
			continue
		}
		out[k] = redactValue(v, depth+1)
	}
	return out
}

func redactValue(v any, depth int) any {
	switch t := v.(type) {
	case map[string]any:
		if depth >= maxRedactDepth {
			return "[Max depth exceeded]"
		}
		return redactMap(t, depth)
	case []any:
		if depth >= maxRedactDepth {
			return "[Max depth exceeded]"
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = redactValue(e, depth+1)
		}
		return out
	case string:
		if cardNumber(t) {
			return Redacted
		}
	}
	return v
}

// secretKey reports whether a key names a secret: one of secretKeyParts
// in it, lower-cased without '_' and '-'. Keys are checked on every logged
// execution, so a short ASCII key (nearly every key) is normalised on the
// stack; others take the Unicode path (some non-ASCII letters lower-case
// to ASCII ones: the Kelvin sign is a 'k').
func secretKey(k string) bool {
	var buf [64]byte
	n := 0
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 0x80 || n == len(buf):
			return secretKeyUnicode(k)
		case c == '_' || c == '-':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	key := buf[:n]
	for i, c := range key {
		for _, p := range secretKeyPartsFrom[c] {
			if bytes.HasPrefix(key[i:], p) {
				return true
			}
		}
	}
	return false
}

// secretKeyPartsFrom are secretKeyParts as byte slices by their first
// byte, for secretKey: each position of a key is compared with the few
// parts that start with its byte (a key of 8 bytes, 8 lookups and a
// comparison or two), rather than the key searched for each of the 15
// parts; keys are checked on every logged execution.
var secretKeyPartsFrom = func() (t [256][][]byte) {
	for _, p := range secretKeyParts {
		t[p[0]] = append(t[p[0]], []byte(p))
	}
	return t
}()

// secretKeyUnicode is secretKey for any key.
func secretKeyUnicode(k string) bool {
	var b strings.Builder
	for _, r := range k {
		if r != '_' && r != '-' {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	norm := b.String()
	for _, p := range secretKeyParts {
		if strings.Contains(norm, p) {
			return true
		}
	}
	return false
}

// cardNumber reports whether s is 13 to 19 digits (spaces and dashes
// between them allowed) that pass the Luhn check.
func cardNumber(s string) bool {
	if len(s) < 13 || len(s) > 40 {
		return false
	}
	digits := make([]byte, 0, 19)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c-'0')
		case c == ' ' || c == '-':
		default:
			return false
		}
	}
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i])
		if (len(digits)-1-i)%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
