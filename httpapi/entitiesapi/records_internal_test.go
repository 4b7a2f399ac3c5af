package entitiesapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// recordBodies are record write bodies: the common ones, the members in
// every form decodeRecord reads, and ones the fast path must decline.
var recordBodies = []string{
	`{"entityId":"bench.items","values":{"title":"Bench item","status":"open","total":1234.56,"qty":3,"note":"x"}}`,
	`{"entityId":"a.b","recordId":"0b7d9c3e-2f4a-4c1e-9d1a-3e5f7a9b1c2d","values":{"k":null}}`,
	`{"entityId":"a.b","customFields":{"cf_a":1,"b":[1,"x",{"y":null}]},"cf_a":2,"cf_c":"\u00e9\ud83d\ude00"}`,
	`{"entityId":"a.b","values":{"a":1,"cf_a":2},"customFields":{"a":3},"cf_a":4}`,
	`{"entityId":null,"recordId":null,"values":null,"customFields":null}`,
	`{"entityId":"a.b","values":{},"customFields":{}}`,
	`{"entityId":"a.b","values":{"a":1},"values":{"b":2}}`,
	`{"entityId":"a.b","entityId":"c.d","cf_x":true,"cf_y":false,"other":[1,2]}`,
	` {"values" : {"x" : 1e3, "y": -0.5, "z": 12345678901234567890} } `,
	`{}`,
	`{"entityId":1}`,
	`{"recordId":true}`,
	`{"values":[1]}`,
	`{"customFields":"x"}`,
	`{"values":"x","entityId":"a.b"}`,
	`[]`,
	`null`,
	``,
	`{"entityId":"a.b"`,
	`{"entityId":"a.b"} {}`,
	`{"cf_x":1e999}`,
	`{"cf_x":"\ud800"}`,
}

// decodeRecordFast gives what decodeRecordBody gives, for every body it
// reads, and reads the common bodies.
func TestDecodeRecordFast(t *testing.T) {
	read := 0
	for _, body := range recordBodies {
		if checkDecodeRecord(t, []byte(body)) {
			read++
		}
	}
	if read < 9 {
		t.Errorf("the fast path read %d of the bodies, want the first 9 at least", read)
	}
	if _, ok := decodeRecordFast([]byte(recordBodies[0])); !ok {
		t.Error("the fast path declined the common body")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, body := range recordBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeRecord(t, body) })
}

// checkDecodeRecord compares the two paths on body and reports whether
// the fast one read it.
func checkDecodeRecord(t *testing.T, body []byte) bool {
	t.Helper()
	fast, ok := decodeRecordFast(body)
	if !ok {
		return false
	}
	slow, err := decodeRecordBody(body)
	if err != nil {
		t.Errorf("%s: the fast path read it, encoding/json refused it: %v", body, err)
		return true
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("%s:\nfast %#v\nslow %#v", body, fast, slow)
	}
	return true
}

// recordWritten's JSON is what apikit.Encode writes for recordWriteBody.
func TestRecordWrittenJSON(t *testing.T) {
	for _, ref := range []recordRef{
		{EntityID: "bench.items", RecordID: "0b7d9c3e-2f4a-4c1e-9d1a-3e5f7a9b1c2d"},
		{},
		{EntityID: `a<b>&"c"\`, RecordID: "\u2028\u2029\x01é\xff"},
	} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(recordWriteBody{OK: true, Item: ref}); err != nil {
			t.Fatal(err)
		}
		got, err := recordWritten(ref).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got)+"\n" != want.String() {
			t.Errorf("%+v:\ngot  %s\nwant %s", ref, got, want.String())
		}
	}
}
