package httpapi

import (
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"testing"

	"github.com/matryer/is"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/store"
)

// query parses a raw query string for a test.
func query(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("parse query %q: %v", raw, err)
	}
	return q
}

// checkFields asserts that err is nil when want is nil, and otherwise that it
// is an ErrInvalid *store.ValidationError with exactly the fields in want.
func checkFields(t *testing.T, err error, want map[string]string) {
	t.Helper()
	is := is.New(t)
	if want == nil {
		is.NoErr(err)
		return
	}
	is.True(errors.Is(err, store.ErrInvalid)) // error is an ErrInvalid
	var ve *store.ValidationError
	is.True(errors.As(err, &ve)) // error is a *store.ValidationError
	is.Equal(ve.Fields, want)
}

func TestParsePage(t *testing.T) {
	pos := "must be a positive integer"
	tests := []struct {
		name   string
		query  string
		want   apikit.PageParams
		fields map[string]string
	}{
		{name: "defaults", query: "", want: apikit.PageParams{Page: 1, PageSize: 20}},
		{name: "empty values are defaults", query: "page=&pageSize=", want: apikit.PageParams{Page: 1, PageSize: 20}},
		{name: "explicit", query: "page=3&pageSize=10", want: apikit.PageParams{Page: 3, PageSize: 10}},
		{name: "pageSize at max", query: "pageSize=100", want: apikit.PageParams{Page: 1, PageSize: 100}},
		{name: "pageSize clamped", query: "pageSize=101", want: apikit.PageParams{Page: 1, PageSize: 100}},
		{name: "pageSize far above max", query: "page=2&pageSize=1000000", want: apikit.PageParams{Page: 2, PageSize: 100}},
		{name: "page zero", query: "page=0", fields: map[string]string{"page": pos}},
		{name: "page negative", query: "page=-1", fields: map[string]string{"page": pos}},
		{name: "page not a number", query: "page=abc", fields: map[string]string{"page": pos}},
		{name: "page fractional", query: "page=1.5", fields: map[string]string{"page": pos}},
		{name: "page overflows int", query: "page=99999999999999999999", fields: map[string]string{"page": pos}},
		{name: "page offset would overflow", query: "page=" + strconv.Itoa(1<<62), fields: map[string]string{"page": "is too large"}},
		{name: "pageSize zero", query: "pageSize=0", fields: map[string]string{"pageSize": pos}},
		{name: "pageSize negative", query: "pageSize=-5", fields: map[string]string{"pageSize": pos}},
		{name: "pageSize not a number", query: "pageSize=ten", fields: map[string]string{"pageSize": pos}},
		{name: "both invalid", query: "page=x&pageSize=0", fields: map[string]string{"page": pos, "pageSize": pos}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got, err := apikit.ParsePage(query(t, tc.query), 20, 100)
			checkFields(t, err, tc.fields)
			is.Equal(got, tc.want)
		})
	}
}

func TestPageOffset(t *testing.T) {
	tests := []struct {
		p    apikit.PageParams
		want int
	}{
		{apikit.PageParams{Page: 1, PageSize: 20}, 0},
		{apikit.PageParams{Page: 2, PageSize: 20}, 20},
		{apikit.PageParams{Page: 3, PageSize: 10}, 20},
	}
	for _, tc := range tests {
		is.New(t).Equal(tc.p.Offset(), tc.want)
	}
}

func TestNewPage(t *testing.T) {
	tests := []struct {
		total, pageSize, wantPages int
	}{
		{total: 0, pageSize: 10, wantPages: 0},
		{total: 1, pageSize: 10, wantPages: 1},
		{total: 9, pageSize: 10, wantPages: 1},
		{total: 10, pageSize: 10, wantPages: 1},
		{total: 11, pageSize: 10, wantPages: 2},
		{total: 20, pageSize: 10, wantPages: 2},
		{total: 21, pageSize: 10, wantPages: 3},
		{total: 7, pageSize: 1, wantPages: 7},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.total)+"/"+strconv.Itoa(tc.pageSize), func(t *testing.T) {
			is := is.New(t)
			got := apikit.NewPage([]string{"a"}, tc.total, apikit.PageParams{Page: 2, PageSize: tc.pageSize})
			is.Equal(got.TotalPages, tc.wantPages)
			is.Equal(got.Total, tc.total)
			is.Equal(got.Page, 2)
			is.Equal(got.PageSize, tc.pageSize)
			is.Equal(got.Items, []string{"a"})
		})
	}
}

func TestNewPageJSON(t *testing.T) {
	tests := []struct {
		name  string
		items []int
		total int
		want  string
	}{
		{name: "nil items", items: nil, total: 0, want: `{"items":[],"total":0,"page":1,"pageSize":20,"totalPages":0}`},
		{name: "empty items", items: []int{}, total: 0, want: `{"items":[],"total":0,"page":1,"pageSize":20,"totalPages":0}`},
		{name: "some items", items: []int{1, 2}, total: 41, want: `{"items":[1,2],"total":41,"page":1,"pageSize":20,"totalPages":3}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			b, err := json.Marshal(apikit.NewPage(tc.items, tc.total, apikit.PageParams{Page: 1, PageSize: 20}))
			is.NoErr(err)
			is.Equal(string(b), tc.want)
		})
	}
}

func TestParseLimitOffset(t *testing.T) {
	pos, nonNeg := "must be a positive integer", "must be a non-negative integer"
	tests := []struct {
		name   string
		query  string
		want   apikit.LimitOffset
		fields map[string]string
	}{
		{name: "defaults", query: "", want: apikit.LimitOffset{Limit: 50, Offset: 0}},
		{name: "empty values are defaults", query: "limit=&offset=", want: apikit.LimitOffset{Limit: 50, Offset: 0}},
		{name: "explicit", query: "limit=5&offset=15", want: apikit.LimitOffset{Limit: 5, Offset: 15}},
		{name: "offset zero", query: "offset=0", want: apikit.LimitOffset{Limit: 50, Offset: 0}},
		{name: "limit at max", query: "limit=200", want: apikit.LimitOffset{Limit: 200}},
		{name: "limit clamped", query: "limit=201&offset=3", want: apikit.LimitOffset{Limit: 200, Offset: 3}},
		{name: "limit zero", query: "limit=0", fields: map[string]string{"limit": pos}},
		{name: "limit negative", query: "limit=-3", fields: map[string]string{"limit": pos}},
		{name: "limit not a number", query: "limit=many", fields: map[string]string{"limit": pos}},
		{name: "offset negative", query: "offset=-1", fields: map[string]string{"offset": nonNeg}},
		{name: "offset not a number", query: "offset=1e3", fields: map[string]string{"offset": nonNeg}},
		{name: "both invalid", query: "limit=x&offset=-2", fields: map[string]string{"limit": pos, "offset": nonNeg}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got, err := apikit.ParseLimitOffset(query(t, tc.query), 50, 200)
			checkFields(t, err, tc.fields)
			is.Equal(got, tc.want)
		})
	}
}

func TestParseSort(t *testing.T) {
	allowed := []string{"name", "createdAt", "email"}
	oneOf := "must be one of createdAt, email, name"
	dir := "must be asc or desc"
	tests := []struct {
		name   string
		query  string
		want   apikit.SortParams
		fields map[string]string
	}{
		{name: "default", query: "", want: apikit.SortParams{Field: "name"}},
		{name: "default desc", query: "sortDir=desc", want: apikit.SortParams{Field: "name", Desc: true}},
		{name: "field asc", query: "sortField=email&sortDir=asc", want: apikit.SortParams{Field: "email"}},
		{name: "field desc", query: "sortField=createdAt&sortDir=desc", want: apikit.SortParams{Field: "createdAt", Desc: true}},
		{name: "dir case-insensitive", query: "sortField=email&sortDir=DeSc", want: apikit.SortParams{Field: "email", Desc: true}},
		{name: "dir upper asc", query: "sortDir=ASC", want: apikit.SortParams{Field: "name"}},
		{name: "unknown field", query: "sortField=password", fields: map[string]string{"sortField": oneOf}},
		{name: "column name is not a field", query: "sortField=t.name", fields: map[string]string{"sortField": oneOf}},
		{name: "injection attempt", query: "sortField=" + url.QueryEscape("name; DROP TABLE t"), fields: map[string]string{"sortField": oneOf}},
		{name: "field case-sensitive", query: "sortField=Name", fields: map[string]string{"sortField": oneOf}},
		{name: "bad dir", query: "sortDir=up", fields: map[string]string{"sortDir": dir}},
		{name: "both invalid", query: "sortField=x&sortDir=sideways", fields: map[string]string{"sortField": oneOf, "sortDir": dir}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got, err := apikit.ParseSort(query(t, tc.query), allowed, "name")
			checkFields(t, err, tc.fields)
			is.Equal(got, tc.want)
		})
	}
}

func TestParseSortBadDefault(t *testing.T) {
	is := is.New(t)
	_, err := apikit.ParseSort(url.Values{}, []string{"name"}, "missing")
	is.True(err != nil)
	is.True(!errors.Is(err, store.ErrInvalid)) // a programming error is not a client error
}

func TestParseBool(t *testing.T) {
	yes, no := true, false
	msg := map[string]string{"active": "must be true or false"}
	tests := []struct {
		query  string
		want   *bool
		fields map[string]string
	}{
		{query: "", want: nil},
		{query: "other=true", want: nil},
		{query: "active=", want: nil},
		{query: "active=true", want: &yes},
		{query: "active=TRUE", want: &yes},
		{query: "active=1", want: &yes},
		{query: "active=false", want: &no},
		{query: "active=False", want: &no},
		{query: "active=0", want: &no},
		{query: "active=yes", fields: msg},
		{query: "active=2", fields: msg},
		{query: "active=t", fields: msg},
		{query: "active=%20true", fields: msg},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			is := is.New(t)
			got, err := apikit.ParseBool(query(t, tc.query), "active")
			checkFields(t, err, tc.fields)
			if tc.want == nil {
				is.Equal(got, nil)
				return
			}
			is.True(got != nil)
			is.Equal(*got, *tc.want)
		})
	}
}
