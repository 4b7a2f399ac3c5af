package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/httpapi/rulesapi"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
)

// decodeWithDecoder is decode as it was before it used json.Unmarshal:
// the UTF-8 check, then a json.Decoder and a Token for trailing data
// (decodeStream, now decode's path for a body Unmarshal refuses). It is
// the reference FuzzDecode holds decode to.
func decodeWithDecoder[T any](body []byte) (T, error) {
	var v T
	if !utf8.Valid(body) {
		return v, apikit.InvalidUTF8(body)
	}
	err := apikit.DecodeStream(body, &v)
	return v, err
}

// decodeCases are bodies for FuzzDecode's seeds and TestDecodeMessages.
var decodeCases = []string{
	``, ` `, "\n\t ", `{`, `{"entityType":`, `{"entityType":"order"`, `[`, `"`, `nul`,
	`{}`, `null`, `[]`, `"x"`, `1`, `true`,
	`{"entityType":"order","entityId":"o-1","eventType":"beforeUpdate","dryRun":true,"data":{"amount":1250.5,"status":"ACTIVE","tags":["a",1,null],"n":{"x":false}}}`,
	`{"ENTITYTYPE":"case","Data":{"a":1}}`,
	`{"data":{"a":1},"data":{"b":2}}`,
	`{"entityType":1}`, `{"dryRun":"yes"}`, `{"data":[]}`, `{"data":"x"}`, `{"context":5}`,
	`{} {}`, `{}x`, `{} ]`, `{}  `, "{}\n", `{"a":1}}`, `{"a":1,}`, `{'a':1}`, `{"a" 1}`,
	`{"data":{"a":1e400}}`, `{"data":{"a":-}}`, `{"data":{"a":01}}`, `{"entityId":"\ud800"}`,
	"{\"entityId\":\"a\x00b\"}", "{\"entityId\":\"\xff\"}", `{"entityType":null,"data":null}`,
}

// FuzzDecode holds decode (json.Unmarshal) to the json.Decoder reference:
// the same value and the same error message for every body.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameAsReference(t, body, apikit.Decode[rules.Input]) })
}

// FuzzDecodeRuleInput holds the execute endpoints' decoding (jsondec's
// one pass where it applies) to the same reference: the same value and
// the same error message for every body.
func FuzzDecodeRuleInput(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameAsReference(t, body, rulesapi.DecodeRuleInput) })
}

// The bodies clients send take the one-pass path; the ones it must leave
// to encoding/json do not.
func TestRuleInputFastPath(t *testing.T) {
	for body, fast := range map[string]bool{
		decodeCases[15]: true,
		`{"entityType":"order","data":{},"context":{"k":[1]},"dryRun":false,"entityId":null}`: true,
		`{"data":{"a":1},"data":{"b":2}}`:    false, // encoding/json merges the two
		`{"ENTITYTYPE":"case","data":{}}`:    false, // encoding/json matches it to entityType
		`{"entityType":"o","data":{},"x":1}`: false,
		`{"entityType":1,"data":{}}`:         false,
		`{"dryRun":"yes","data":{}}`:         false,
	} {
		if _, ok := rulesapi.RuleInputFast([]byte(body)); ok != fast {
			t.Errorf("body %s: one-pass %v, want %v", body, ok, fast)
		}
	}
}

// sameAsReference fails t unless decode gives body the reference's value
// and error message.
func sameAsReference(t *testing.T, body []byte, decode func(*http.Request) (rules.Input, error)) {
	t.Helper()
	got, gotErr := decode(httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
	want, wantErr := decodeWithDecoder[rules.Input](body)
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("body %q: error %q, the reference's %q", body, errText(gotErr), errText(wantErr))
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q: decoded %#v, the reference %#v", body, got, want)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The messages a client sees for the bodies encoding/json names in its
// own way when it unmarshals a whole body.
func TestDecodeMessages(t *testing.T) {
	for body, want := range map[string]string{
		``:                 "Request body is required",
		"  \n":             "Request body is required",
		`{"entityType":`:   "Malformed JSON: the body ends early",
		`{} {}`:            "Malformed JSON: unexpected data after the body",
		`{}x`:              "Malformed JSON: unexpected data after the body",
		`{"a" 1}`:          "Malformed JSON at byte 6",
		`{"entityType":1}`: "entityType",
	} {
		_, err := apikit.Decode[rules.Input](httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("body %q: %v, want an invalid-input error with %q", body, err, want)
		}
	}
}
