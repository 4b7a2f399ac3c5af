package apikit

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// Messages shared by the list parameter parsers.
const (
	MsgPositive    = "must be a positive integer"
	MsgNonNegative = "must be a non-negative integer"
)

// PageParams is the page/pageSize paging style.
type PageParams struct{ Page, PageSize int }

// Offset returns the number of items before the page: (Page-1)*PageSize.
func (p PageParams) Offset() int { return (p.Page - 1) * p.PageSize }

// ParsePage reads "page" (default 1) and "pageSize" (default def) from q.
// A pageSize above maxSize is clamped to maxSize. A non-integer, page < 1 or
// pageSize < 1 is reported in a *store.ValidationError naming the field, as is
// a page so large that its offset would overflow. An empty value counts as
// absent.
func ParsePage(q url.Values, def, maxSize int) (PageParams, error) {
	var v store.ValidationError
	p := PageParams{
		Page:     IntParam(q, "page", 1, 1, MsgPositive, &v),
		PageSize: min(IntParam(q, "pageSize", def, 1, MsgPositive, &v), maxSize),
	}
	if p.PageSize > 0 && p.Page-1 > math.MaxInt/p.PageSize {
		v.Add("page", "is too large")
	}
	if err := v.Err(); err != nil {
		return PageParams{}, err
	}
	return p, nil
}

// PageResponse is the shared list body {items, total, page, pageSize,
// totalPages}.
type PageResponse[T any] struct {
	Items      []T `json:"items"`
	Total      int `json:"total"`
	Page       int `json:"page"`
	PageSize   int `json:"pageSize"`
	TotalPages int `json:"totalPages"`
}

// NewPage builds a pageResponse. Items is never nil, so an empty list encodes
// as []; TotalPages is ceil(total/PageSize), 0 when total is 0.
func NewPage[T any](items []T, total int, p PageParams) PageResponse[T] {
	if items == nil {
		items = []T{}
	}
	pages := 0
	if total > 0 && p.PageSize > 0 {
		pages = total / p.PageSize
		if total%p.PageSize != 0 {
			pages++
		}
	}
	return PageResponse[T]{Items: items, Total: total, Page: p.Page, PageSize: p.PageSize, TotalPages: pages}
}

// LimitOffset is the limit/offset paging style (rule sets).
type LimitOffset struct{ Limit, Offset int }

// ParseLimitOffset reads "limit" (default def, clamped to maxLimit) and
// "offset" (default 0) from q. A non-integer, limit < 1 or offset < 0 is
// reported in a *store.ValidationError naming "limit" or "offset". An empty
// value counts as absent.
func ParseLimitOffset(q url.Values, def, maxLimit int) (LimitOffset, error) {
	var v store.ValidationError
	lo := LimitOffset{
		Limit:  min(IntParam(q, "limit", def, 1, MsgPositive, &v), maxLimit),
		Offset: IntParam(q, "offset", 0, 0, MsgNonNegative, &v),
	}
	if err := v.Err(); err != nil {
		return LimitOffset{}, err
	}
	return lo, nil
}

// IntParam returns the integer query parameter name, or def when it is absent
// or empty. A value that is not an integer or is below lo is recorded in v
// with msg.
func IntParam(q url.Values, name string, def, lo int, msg string, v *store.ValidationError) int {
	s := q.Get(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo {
		v.Add(name, msg)
		return def
	}
	return n
}

// SortParams is a validated sort order: Field is the API field name (the
// area's store maps it to a column), Desc is true for sortDir=desc.
type SortParams struct {
	Field string
	Desc  bool
}

// ParseSort reads "sortField" and "sortDir" from q. allowed lists the API
// field names the list sorts by; a missing sortField selects def, which
// must be one of them (otherwise a plain, non-validation error is
// returned since that is a programming mistake). The direction is
// ascending unless sortDir=desc; asc/desc are case-insensitive. An unknown
// sortField or a bad sortDir is reported in a *store.ValidationError; both
// are reported together.
func ParseSort(q url.Values, allowed []string, def string) (SortParams, error) {
	if !slices.Contains(allowed, def) {
		return SortParams{}, fmt.Errorf("httpapi: default sort field %q is not in the allowed set", def)
	}
	var v store.ValidationError
	field := q.Get("sortField")
	if field == "" {
		field = def
	}
	if !slices.Contains(allowed, field) {
		v.Add("sortField", "must be one of "+strings.Join(slices.Sorted(slices.Values(allowed)), ", "))
	}
	desc := false
	switch strings.ToLower(q.Get("sortDir")) {
	case "", "asc":
	case "desc":
		desc = true
	default:
		v.Add("sortDir", "must be asc or desc")
	}
	if err := v.Err(); err != nil {
		return SortParams{}, err
	}
	return SortParams{Field: field, Desc: desc}, nil
}

// ParseBool reads the optional boolean query parameter name: absent or empty
// gives (nil, nil); "true"/"1" gives true and "false"/"0" false (letters are
// case-insensitive); anything else is a *store.ValidationError naming the
// parameter.
func ParseBool(q url.Values, name string) (*bool, error) {
	var b bool
	switch strings.ToLower(q.Get(name)) {
	case "":
		return nil, nil
	case "true", "1":
		b = true
	case "false", "0":
		b = false
	default:
		return nil, store.Invalid(name, "must be true or false")
	}
	return &b, nil
}

// CheckText refuses the named text query parameters (search terms and
// filters) that neither engine can compare: text holding NUL or invalid
// UTF-8 (store.Storable). SQLite's LIKE stops at a NUL, so such a term
// would match everything there, while PostgreSQL fails on it. Each bad
// parameter is named in one *store.ValidationError, with the message the
// record lists give ("must be valid text"). Lists call it before reading.
func CheckText(q url.Values, names ...string) error {
	var v store.ValidationError
	for _, name := range names {
		if !store.Storable(q.Get(name)) {
			v.Add(name, "must be valid text")
		}
	}
	return v.Err()
}

// QueryParam is u.Query().Get(name), the first value of name, without
// building the map of every parameter: a hot route reading one parameter
// (a toggle check: Query was 8% of its CPU). Like url.ParseQuery it skips
// pairs holding a semicolon or a bad escape.
func QueryParam(u *url.URL, name string) string {
	q := u.RawQuery
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k != name { // the common case: no escape in the key
			var err error
			if k, err = url.QueryUnescape(k); err != nil || k != name {
				continue
			}
		}
		if v, err := url.QueryUnescape(v); err == nil {
			return v
		}
	}
	return ""
}

// StrictPageQuery documents StrictPage: PageQuery with pageSize at most
// maxSize.
func StrictPageQuery(def, maxSize int) []Param {
	ps := PageQuery(def, maxSize)
	ps[1].Maximum = Bound(float64(maxSize))
	ps[1].Description = "Items per page, at most " + strconv.Itoa(maxSize) + " (default " + strconv.Itoa(def) + ")"
	return ps
}

// StrictPage is ParsePage refusing (400) a pageSize above maxSize instead
// of clamping it.
func StrictPage(r *http.Request, def, maxSize int) (PageParams, error) {
	q := r.URL.Query()
	if n, err := strconv.Atoi(q.Get("pageSize")); err == nil && n > maxSize {
		return PageParams{}, store.Invalid("pageSize", "must be at most "+strconv.Itoa(maxSize))
	}
	return ParsePage(q, def, maxSize)
}

// SearchPage is the shared list body of a list with a free-text search:
// PageResponse and totalCapped, present (true) only when the search
// matched more than store.SearchTotalCap rows and total is that cap.
type SearchPage[T any] struct {
	PageResponse[T]
	TotalCapped bool `json:"totalCapped,omitempty" jsonschema:"description=Present and true when a search matched more rows than a search's total counts (10000): total is then 10000 and totalPages follows from it. Without a search the total is exact and the field is absent."`
}

// NewSearchPage is NewPage for a list whose total a search (searched)
// counted at most store.SearchCap(ctx)+1 matches of (ctx: the request's):
// a larger total is
// reported as the cap with TotalCapped set (store.CapTotal).
func NewSearchPage[T any](ctx context.Context, items []T, total int, searched bool, p PageParams) SearchPage[T] {
	total, capped := store.CapTotal(ctx, total, searched)
	return SearchPage[T]{PageResponse: NewPage(items, total, p), TotalCapped: capped}
}
