package apikit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// jsonContentType is the Content-Type of every JSON answer: exactly the
// media type the OpenAPI document names, without a charset parameter
// (RFC 8259 defines none; JSON is UTF-8). A client generated from the
// document may compare it exactly: oapi-codegen does where a response has
// several JSON media types (a list's page and its format=json export).
const JSONContentType = "application/json"

// jsonContentTypeValue is JSONContentType as a header's values, assigned
// to each JSON answer's header map as it is: no key to canonicalize and no
// slice to allocate per answer, as Header.Set has. Its capacity is its
// length, so that an Add to the answer's Content-Type copies it; nothing
// writes into a header's value slice in place.
var jsonContentTypeValue = []string{JSONContentType}[0:1:1]

// setJSONContentType sets the answer's Content-Type to JSONContentType.
func setJSONContentType(w http.ResponseWriter) {
	w.Header()["Content-Type"] = jsonContentTypeValue
}

// Encode writes v as the JSON response body with status (as a
// json.Encoder writes it: HTML characters escaped, a trailing newline). v
// is encoded before anything is written, so an encoding error is
// returned with nothing sent. A nil v answers status with no body.
func Encode(w http.ResponseWriter, status int, v any) error {
	if v == nil {
		setJSONContentType(w)
		w.WriteHeader(status)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return EncodeJSON(w, status, append(b, '\n'))
}

// EncodeMarshaled answers status with m's JSON as encode would write it,
// without encoding/json's second pass over a Marshaler's output (it
// validates and compacts it): for bodies whose MarshalJSON writes compact,
// HTML-escaped JSON itself (rules' results). An encoding error is
// returned before anything is written.
func EncodeMarshaled(w http.ResponseWriter, status int, m json.Marshaler) error {
	b, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	return EncodeJSON(w, status, append(b, '\n'))
}

// chunkingSize is the size from which net/http sends a body of unknown
// length chunked (its bufferBeforeChunkingSize).
const chunkingSize = 2048

// EncodeJSON answers status with body, JSON written by the caller (with
// Encode's trailing newline), and its Content-Length. Decision: every
// JSON answer is whole before it is written, so it says its length:
// without one, net/http sends a body above 2 KB chunked (a rule set's
// execution, a page of records), and a client learns the length only at
// the end. (Measured: no fewer write calls per answer either way.)
func EncodeJSON(w http.ResponseWriter, status int, body []byte) error {
	h := w.Header()
	h["Content-Type"] = jsonContentTypeValue
	// net/http adds the length of a shorter body itself (one it holds
	// whole when the handler returns); saying it costs an allocation.
	if len(body) >= chunkingSize && status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// AppendJSONString appends s as a JSON string exactly as encoding/json
// writes it (HTML characters escaped, as an Encoder does by default;
// invalid UTF-8 replaced): for bodies written by hand without
// reflection. Plain ASCII is copied as is; anything else goes through
// json.Marshal.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// errBodyTooLarge answers 413.
var ErrBodyTooLarge = errors.New("request body too large")

// Decode reads a JSON request body into a T. Malformed JSON, a value of the
// wrong type, trailing data and an empty body are ErrInvalid errors naming
// the problem (and the field, for wrong types); an oversize body is
// errBodyTooLarge. Unknown fields are ignored.
//
// The body is read whole and decoded with json.Unmarshal (one validating
// scan, one decoding pass, no json.Decoder buffer and no second read for
// trailing data); a body it refuses is read again by decodeStream, whose
// json.Decoder names the problem (an empty body, one that ends early,
// data after the value) in the terms of the messages above.
func Decode[T any](r *http.Request) (T, error) {
	body, err := ReadBody(r)
	if err != nil {
		var zero T
		return zero, err
	}
	return DecodeBody[T](body)
}

// ReadBody reads a request body for decoding: whole, and only if it is
// UTF-8 (encoding/json would quietly replace bad bytes with U+FFFD).
func ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, store.Errorf(store.ErrInvalid, "Request body is required")
	}
	body, err := readAll(r.Body, r.ContentLength)
	if err != nil {
		return nil, DecodeError(err)
	}
	if !utf8.Valid(body) {
		return nil, InvalidUTF8(body)
	}
	return body, nil
}

// presized is the most of a body's announced length readAll allocates
// before reading: a larger body grows its buffer as it arrives, so that a
// request claiming a huge length does not reserve it.
const presized = 64 << 10

// readAll is io.ReadAll with a buffer the size of the announced length
// (size, -1 when unknown; at most presized), one byte more for the read
// that meets the end: one allocation for a body whose length is known,
// where io.ReadAll's 512 bytes grow two or three times for a rule
// execution's.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, min(size, presized)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append grow it
		}
	}
}

// DecodeBody is decode's decoding of a body readBody read.
func DecodeBody[T any](body []byte) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		var again T
		err := DecodeStream(body, &again)
		return again, err
	}
	return v, nil
}

// DecodeStream decodes body into v with a json.Decoder and returns the
// error a client is shown, nil if there is none.
func DecodeStream(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return DecodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return store.Errorf(store.ErrInvalid, "Malformed JSON: unexpected data after the body")
	}
	return nil
}

// InvalidUTF8 names the top-level field of a JSON object body whose key or
// value holds the first byte that is not UTF-8.
func InvalidUTF8(body []byte) error {
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

func DecodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Errorf("%w (limit %d bytes)", ErrBodyTooLarge, tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return store.Errorf(store.ErrInvalid, "Request body is required")
	case errors.As(err, &syntax):
		return store.Errorf(store.ErrInvalid, "Malformed JSON at byte %d", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return store.Errorf(store.ErrInvalid, "Malformed JSON: the body ends early")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return store.Errorf(store.ErrInvalid, "Request body must be a JSON %s", JSONKind(typ.Type.Kind().String()))
		}
		return store.Invalid(field, "must be "+Article(JSONKind(typ.Type.Kind().String())))
	}
	return store.Errorf(store.ErrInvalid, "Malformed JSON")
}

// JSONKind names a Go kind the way a JSON user thinks of it.
func JSONKind(kind string) string {
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

func Article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// MaxInboundBody bounds an inbound webhook message, whatever the API's body
// limit.
const MaxInboundBody = 1 << 20

// TimeOrNull is t as RFC 3339 text in UTC, nil when t is nil: a time
// field the API shows as null when unset.
func TimeOrNull(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
