package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/datasync"
)

// Export result statuses (datasync.ExportResult.Status).
const (
	statusSuccess = "success"
	statusFailed  = "error"
	statusSkipped = "skipped"
)

// noResult is the error of an exported item the target said nothing of.
const noResult = "no result from the target"

// rawPage is an import page before its checks.
type rawPage struct {
	Items         json.RawMessage `json:"items"`
	NextCursor    json.RawMessage `json:"nextCursor"`
	TotalEstimate json.RawMessage `json:"totalEstimate"`
}

// rawItem is an imported item before its checks.
type rawItem struct {
	ExternalID json.RawMessage `json:"externalId"`
	Data       json.RawMessage `json:"data"`
}

// decodePage reads an import page answering a request with cursor and
// limit: {items:[{externalId, data}], nextCursor: string|null,
// totalEstimate?: number}. Its error names the first problem found
// (items[i].field for an item).
func decodePage(body []byte, cursor string, limit int) (*datasync.ImportBatch, error) {
	var p rawPage
	if err := unmarshalObject(body, &p, "the page"); err != nil {
		return nil, err
	}
	if kind(p.Items) != '[' {
		return nil, errors.New("items must be an array")
	}
	// The body was checked whole (unmarshalObject): the array's elements
	// are found without checking them again.
	items := splitArray(p.Items)
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

// decodeItem reads one imported item; its error starts with the field
// (".externalId …") or " …" for the item itself.
func decodeItem(raw json.RawMessage) (datasync.Item, error) {
	var it datasync.Item
	if kind(raw) != '{' {
		return it, errors.New(" must be an object")
	}
	var r rawItem
	if err := json.Unmarshal(raw, &r); err != nil {
		return it, errors.New(" must be an object")
	}
	if kind(r.ExternalID) != '"' || json.Unmarshal(r.ExternalID, &it.ExternalID) != nil || it.ExternalID == "" {
		return it, errors.New(".externalId must be a non-empty string")
	}
	if problem := externalIDProblem(it.ExternalID); problem != "" {
		return it, errors.New(".externalId " + problem)
	}
	if kind(r.Data) != '{' || json.Unmarshal(r.Data, &it.Data) != nil {
		return it, errors.New(".data must be an object")
	}
	return it, nil
}

// externalIDProblem says what is wrong with a non-empty external id, or
// "".
func externalIDProblem(id string) string {
	switch {
	case len(id) > MaxExternalIDBytes:
		return fmt.Sprintf("is longer than %d bytes", MaxExternalIDBytes)
	case !utf8.ValidString(id):
		return "is not valid UTF-8"
	case strings.IndexByte(id, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}

// rawResults is an export response before its checks.
type rawResults struct {
	Results json.RawMessage `json:"results"`
}

// rawResult is one export result before its checks.
type rawResult struct {
	LocalID    json.RawMessage `json:"localId"`
	ExternalID json.RawMessage `json:"externalId"`
	Status     json.RawMessage `json:"status"`
	Error      json.RawMessage `json:"error"`
}

// decodeResults reads an export response, {results:[{localId,
// externalId?, status, error?}]}, into a result per item, in the order
// of items. A malformed response (not an object, results not an array,
// a result not an object, a localId not a string, an externalId or error
// neither a string nor null) is an error. Otherwise: results of unknown
// localIds are ignored, the first result of a localId counts, an item
// with none gets status error (noResult), an unknown status or an
// invalid externalId of a success becomes an error result. Error texts
// are cleaned (sanitize: the token redacted) and at most maxErrorBytes.
func decodeResults(body []byte, items []datasync.ExportItem, token string) ([]datasync.ExportResult, error) {
	var r rawResults
	if err := unmarshalObject(body, &r, "the response"); err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if kind(r.Results) != '[' || json.Unmarshal(r.Results, &raws) != nil {
		return nil, errors.New("results must be an array")
	}
	wanted := make(map[string]bool, len(items))
	for _, it := range items {
		wanted[it.LocalID] = true
	}
	got := make(map[string]datasync.ExportResult, len(items))
	for i, raw := range raws {
		var rr rawResult
		if kind(raw) != '{' || json.Unmarshal(raw, &rr) != nil {
			return nil, fmt.Errorf("results[%d] must be an object", i)
		}
		var res datasync.ExportResult
		if kind(rr.LocalID) != '"' || json.Unmarshal(rr.LocalID, &res.LocalID) != nil {
			return nil, fmt.Errorf("results[%d].localId must be a string", i)
		}
		if !optionalString(rr.ExternalID, &res.ExternalID) {
			return nil, fmt.Errorf("results[%d].externalId must be a string or null", i)
		}
		if !optionalString(rr.Error, &res.Error) {
			return nil, fmt.Errorf("results[%d].error must be a string or null", i)
		}
		if _, seen := got[res.LocalID]; !wanted[res.LocalID] || seen {
			continue
		}
		res.Error = sanitize(res.Error, token, maxErrorBytes)
		var status string
		if kind(rr.Status) == '"' {
			_ = json.Unmarshal(rr.Status, &status)
		}
		switch status {
		case statusSuccess, statusFailed, statusSkipped:
			res.Status = status
		default:
			res.Status = statusFailed
			res.Error = joinError(fmt.Sprintf("unknown status %q", sanitize(status, token, 64)), res.Error)
		}
		if res.ExternalID != "" {
			if problem := externalIDProblem(res.ExternalID); problem != "" {
				if res.Status == statusSuccess {
					res.Status = statusFailed
					res.Error = joinError("the target's externalId "+problem, res.Error)
				}
				res.ExternalID = ""
			}
		}
		res.Error = truncate(res.Error, maxErrorBytes)
		got[res.LocalID] = res
	}
	out := make([]datasync.ExportResult, len(items))
	for i, it := range items {
		res, ok := got[it.LocalID]
		if !ok {
			res = datasync.ExportResult{LocalID: it.LocalID, Status: statusFailed, Error: noResult}
		}
		out[i] = res
	}
	return out, nil
}

// joinError puts the adapter's message before the target's.
func joinError(ours, theirs string) string {
	if theirs == "" {
		return ours
	}
	return ours + ": " + theirs
}

// unmarshalObject decodes body, which must be one JSON object, into v.
// An object is read in one pass: json.Unmarshal checks the whole body
// before it decodes (its syntax error is the one json.Valid finds).
func unmarshalObject(body []byte, v any, what string) error {
	if kind(body) == '{' {
		err := json.Unmarshal(body, v)
		if err == nil {
			return nil
		}
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return fmt.Errorf("%s is not valid JSON (at byte %d)", what, syntax.Offset)
		}
		return fmt.Errorf("%s must be a JSON object", what)
	}
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

// optionalString decodes raw, absent, null or a string, into s.
func optionalString(raw json.RawMessage, s *string) bool {
	switch kind(raw) {
	case 0, 'n':
		return true
	case '"':
		return json.Unmarshal(raw, s) == nil
	}
	return false
}

// nonNegativeInt reads a JSON number that is a non-negative integer
// (1e3 included) within int64.
func nonNegativeInt(raw json.RawMessage) (int64, bool) {
	s := string(bytes.TrimSpace(raw))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, n >= 0
	}
	if k := kind(raw); k != '-' && (k < '0' || k > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// splitArray returns the elements of raw, a valid JSON array (part of a
// body json.Unmarshal or json.Valid accepted), as json.Unmarshal into a
// []json.RawMessage does (here without the checks, and sharing raw's
// bytes): one pass over the bytes, minding strings and nesting only.
func splitArray(raw []byte) []json.RawMessage {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	var out []json.RawMessage
	depth, start := 0, -1
	for i := 1; i < len(raw); i++ { // after the '['
		switch c := raw[i]; c {
		case '"':
			if start < 0 {
				start = i
			}
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if start < 0 {
				start = i
			}
			depth++
		case '}', ']':
			if depth > 0 {
				depth--
				continue
			}
			if start >= 0 {
				out = append(out, bytes.TrimRight(raw[start:i], " \t\r\n"))
			}
			return out
		case ',':
			if depth == 0 {
				out = append(out, bytes.TrimRight(raw[start:i], " \t\r\n"))
				start = -1
			}
		case ' ', '\t', '\r', '\n':
		default:
			if start < 0 {
				start = i
			}
		}
	}
	return out
}

// kind is the first byte of a JSON value ('{', '[', '"', 'n', 't', 'f',
// a digit or '-'), or 0 for an absent one.
func kind(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}
