package httpjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/tenantkit/tenantkit/datasync"
)

// The decoders read a page in fewer passes than they used to (the body
// checked once, the items split without checking them again); the
// reference below is the page decoder as it was, and the fast one must
// answer exactly as it does: the same page, or the same error.

// unmarshalObjectRef is unmarshalObject as it was: json.Valid first.
func unmarshalObjectRef(body []byte, v any, what string) error {
	if !json.Valid(body) {
		var syntax *json.SyntaxError
		if err := json.Unmarshal(body, new(any)); errors.As(err, &syntax) {
			return fmt.Errorf("%s is not valid JSON (at byte %d)", what, syntax.Offset)
		}
		return fmt.Errorf("%s is not valid JSON", what)
	}
	if kind(body) != '{' {
		return fmt.Errorf("%s must be a JSON object", what)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s must be a JSON object", what)
	}
	return nil
}

// decodePageRef is decodePage as it was.
func decodePageRef(body []byte, cursor string, limit int) (*datasync.ImportBatch, error) {
	var p rawPage
	if err := unmarshalObjectRef(body, &p, "the page"); err != nil {
		return nil, err
	}
	if kind(p.Items) != '[' {
		return nil, errors.New("items must be an array")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(p.Items, &items); err != nil {
		return nil, errors.New("items must be an array")
	}
	if len(items) > limit {
		return nil, fmt.Errorf("the page has %d items, more than the limit %d", len(items), limit)
	}
	page := &datasync.ImportBatch{Items: make([]datasync.Item, 0, len(items))}
	for i, raw := range items {
		it, err := decodeItem(raw)
		if err != nil {
			return nil, fmt.Errorf("items[%d]%s", i, err.Error())
		}
		page.Items = append(page.Items, it)
	}
	switch kind(p.NextCursor) {
	case 0, 'n':
	case '"':
		if err := json.Unmarshal(p.NextCursor, &page.NextCursor); err != nil {
			return nil, errors.New("nextCursor must be a string or null")
		}
		switch {
		case len(page.NextCursor) > MaxCursorBytes:
			return nil, fmt.Errorf("nextCursor is longer than %d bytes", MaxCursorBytes)
		case page.NextCursor != "" && page.NextCursor == cursor:
			return nil, errors.New("nextCursor repeats the cursor of the request")
		}
	default:
		return nil, errors.New("nextCursor must be a string or null")
	}
	switch kind(p.TotalEstimate) {
	case 0, 'n':
	default:
		n, ok := nonNegativeInt(p.TotalEstimate)
		if !ok {
			return nil, errors.New("totalEstimate must be a non-negative integer")
		}
		page.TotalEstimate = &n
	}
	return page, nil
}

// samePage fails unless decodePage answers body as decodePageRef does.
func samePage(t *testing.T, body []byte, cursor string, limit int) {
	t.Helper()
	got, gerr := decodePage(body, cursor, limit)
	want, werr := decodePageRef(body, cursor, limit)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("page %q:\n got %+v, %v\nwant %+v, %v", body, got, gerr, want, werr)
	}
}

// sameObject fails unless unmarshalObject answers body as
// unmarshalObjectRef does, into an export response too.
func sameObject(t *testing.T, body []byte) {
	t.Helper()
	var got, want rawResults
	gerr := unmarshalObject(body, &got, "the response")
	werr := unmarshalObjectRef(body, &want, "the response")
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("response %q: got %+v, %v; want %+v, %v", body, got, gerr, want, werr)
	}
}

var refSeeds = []string{
	`{"items":[{"externalId":"a","data":{"name":"A","n":1}},{"externalId":"b","data":{}}],"nextCursor":"c1","totalEstimate":5}`,
	` { "items" : [ { "externalId" : "a" , "data" : { "x" : [ 1 , "]" , { "y" : "\"}" } ] } } , 5 , "s" , null , [ ] , { } ] } `,
	`{"items":[ ],"nextCursor":null}`,
	`{"items":[{"externalId":"a\\\"]","data":{"k":"v\\\\"}}]}`,
	`{"items":[{"externalId":"a","data":{}},{"externalId":"b","data":{}}],"items":[{"externalId":"c","data":{"z":1}}]}`,
	`{"items":[{"externalId":"a","data":{"p":1},"data":{"q":2}}]}`,
	`{"ITEMS":[{"externalId":"a","data":{}}],"NextCursor":"x"}`,
	`{"items":[{"externalId":"a","data":{}}]} x`,
	`{"items":[{"externalId":"a","data":{}}`,
	`{"items":[1,2,3]}`,
	`{"items":[true]}`,
	`{"items":["s"]}`,
	`{"items":[null]}`,
	`{"items":[[]]}`,
	`{"items":{}}`,
	`{"items":"[]"}`,
	`{}`,
	`[]`,
	`null`,
	"\xef\xbb\xbf{}",
	"{\"items\":[{\"externalId\":\"\xff\",\"data\":{}}]}",
	`{"items":[{"externalId":"a","data":{}},{"externalId":"b","data":{}},{"externalId":"c","data":{}}]}`,
}

func TestDecodePageAsBefore(t *testing.T) {
	for _, s := range refSeeds {
		for _, limit := range []int{1, 2, 1000} {
			samePage(t, []byte(s), "c1", limit)
		}
		sameObject(t, []byte(s))
	}
}

func FuzzDecodePageAsBefore(f *testing.F) {
	for _, s := range refSeeds {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit uint8) {
		samePage(t, body, "cur", int(limit)+1)
		sameObject(t, body)
	})
}
