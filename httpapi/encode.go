package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// jsonContentType is the Content-Type of every JSON answer: exactly the
// media type the OpenAPI document names, without a charset parameter
// (RFC 8259 defines none; JSON is UTF-8). A client generated from the
// document may compare it exactly: oapi-codegen does where a response has
// several JSON media types (a list's page and its format=json export).
const jsonContentType = "application/json"

// encode writes v as the JSON response body with status.
func encode(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", jsonContentType)
	w.WriteHeader(status)
	if v == nil {
		return nil
	}
	return json.NewEncoder(w).Encode(v)
}

// encodeMarshaled answers status with m's JSON as encode would write it,
// without encoding/json's second pass over a Marshaler's output (it
// validates and compacts it): for bodies whose MarshalJSON writes compact,
// HTML-escaped JSON itself (rules' results). An encoding error is
// returned before anything is written.
func encodeMarshaled(w http.ResponseWriter, status int, m json.Marshaler) error {
	b, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", jsonContentType)
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// errBodyTooLarge answers 413.
var errBodyTooLarge = errors.New("request body too large")

// decode reads a JSON request body into a T. Malformed JSON, a value of the
// wrong type, trailing data and an empty body are ErrInvalid errors naming
// the problem (and the field, for wrong types); an oversize body is
// errBodyTooLarge. Unknown fields are ignored.
//
// The body is read whole and decoded with json.Unmarshal (one validating
// scan, one decoding pass, no json.Decoder buffer and no second read for
// trailing data); a body it refuses is read again by decodeStream, whose
// json.Decoder names the problem (an empty body, one that ends early,
// data after the value) in the terms of the messages above.
func decode[T any](r *http.Request) (T, error) {
	body, err := readBody(r)
	if err != nil {
		var zero T
		return zero, err
	}
	return decodeBody[T](body)
}

// readBody reads a request body for decoding: whole, and only if it is
// UTF-8 (encoding/json would quietly replace bad bytes with U+FFFD).
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, store.Errorf(store.ErrInvalid, "Request body is required")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, decodeError(err)
	}
	if !utf8.Valid(body) {
		return nil, invalidUTF8(body)
	}
	return body, nil
}

// decodeBody is decode's decoding of a body readBody read.
func decodeBody[T any](body []byte) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		var again T
		err := decodeStream(body, &again)
		return again, err
	}
	return v, nil
}

// decodeStream decodes body into v with a json.Decoder and returns the
// error a client is shown, nil if there is none.
func decodeStream(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return store.Errorf(store.ErrInvalid, "Malformed JSON: unexpected data after the body")
	}
	return nil
}

// invalidUTF8 names the top-level field of a JSON object body whose key or
// value holds the first byte that is not UTF-8.
func invalidUTF8(body []byte) error {
	bad := 0
	for bad < len(body) {
		r, size := utf8.DecodeRune(body[bad:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		bad += size
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	depth, key, expectKey := 0, "", false
	for {
		tok, err := dec.Token()
		if err != nil || dec.InputOffset() > int64(bad) {
			if depth == 1 && expectKey && err == nil {
				key, _ = tok.(string) // the key itself is not UTF-8
			}
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
				expectKey = depth == 1 && t == '{'
			} else if depth--; depth == 1 {
				expectKey = true
			}
		case string:
			if depth == 1 && expectKey {
				key, expectKey = t, false
			} else if depth == 1 {
				expectKey = true
			}
		default:
			if depth == 1 {
				expectKey = true
			}
		}
	}
	if key == "" {
		return store.Errorf(store.ErrInvalid, "Request body must be valid UTF-8")
	}
	return store.Invalid(key, "must be valid UTF-8 text")
}

func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Errorf("%w (limit %d bytes)", errBodyTooLarge, tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return store.Errorf(store.ErrInvalid, "Request body is required")
	case errors.As(err, &syntax):
		return store.Errorf(store.ErrInvalid, "Malformed JSON at byte %d", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return store.Errorf(store.ErrInvalid, "Malformed JSON: the body ends early")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return store.Errorf(store.ErrInvalid, "Request body must be a JSON %s", jsonKind(typ.Type.Kind().String()))
		}
		return store.Invalid(field, "must be "+article(jsonKind(typ.Type.Kind().String())))
	}
	return store.Errorf(store.ErrInvalid, "Malformed JSON")
}

// jsonKind names a Go kind the way a JSON user thinks of it.
func jsonKind(kind string) string {
	switch {
	case kind == "slice" || kind == "array":
		return "array"
	case kind == "map" || kind == "struct":
		return "object"
	case kind == "bool":
		return "boolean"
	case strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint"):
		return "integer"
	case strings.HasPrefix(kind, "float"):
		return "number"
	}
	return kind
}

func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}
