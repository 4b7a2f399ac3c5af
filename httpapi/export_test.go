package httpapi

import (
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/store"
)

func TestParseExportFormat(t *testing.T) {
	tests := []struct {
		query   string
		want    string
		wantErr bool
	}{
		{query: "", want: ""},
		{query: "format=", want: ""},
		{query: "format=csv", want: "csv"},
		{query: "format=json", want: "json"},
		{query: "format=xml", want: "xml"},
		{query: "format=markdown", want: "markdown"},
		{query: "format=CSV", want: "csv"},
		{query: "format=md", wantErr: true},
		{query: "format=pdf", wantErr: true},
		{query: "format=csv%00", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			is := is.New(t)
			got, err := apikit.ParseExportFormat(query(t, tc.query))
			if tc.wantErr {
				checkFields(t, err, map[string]string{"format": "must be one of csv, json, markdown, xml"})
			} else {
				is.NoErr(err)
			}
			is.Equal(got, tc.want)
		})
	}
}

// role is a named string type, as domain enums are.
type role string

func TestCellText(t *testing.T) {
	s := "ptr"
	var nilStr *string
	when := time.Date(2024, 1, 2, 3, 4, 5, 600, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, ""},
		{"string", "a b", "a b"},
		{"empty string", "", ""},
		{"true", true, "true"},
		{"false", false, "false"},
		{"int", -42, "-42"},
		{"int64", int64(1) << 60, "1152921504606846976"},
		{"uint8", uint8(7), "7"},
		{"float", 1.5, "1.5"},
		{"big float", 1e21, "1000000000000000000000"},
		{"small float", 0.000001, "0.000001"},
		{"float32", float32(0.1), "0.1"},
		{"json.Number", json.Number("12.50"), "12.50"},
		{"time in UTC", when, "2024-01-02T02:04:05.0000006Z"},
		{"time pointer", &when, "2024-01-02T02:04:05.0000006Z"},
		{"string pointer", &s, "ptr"},
		{"nil pointer", nilStr, ""},
		{"named string", role("admin"), "admin"},
		{"slice", []any{"a", 1, true}, `["a",1,true]`},
		{"map", map[string]any{"b": 1, "a": "x<y"}, `{"a":"x<y","b":1}`},
		{"nil slice", []any(nil), ""},
		{"struct", struct{ A int }{3}, `{"A":3}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is.New(t).Equal(apikit.CellText(tc.in), tc.want)
		})
	}
}

// sampleTable is a small table with values of several kinds.
func sampleTable() apikit.ExportTable {
	return apikit.ExportTable{
		Columns: []apikit.ExportColumn{{Key: "id", Header: "ID"}, {Key: "name", Header: "Name"}, {Key: "active", Header: "Active"}, {Key: "tags", Header: "Tags"}, {Key: "created", Header: "Created"}},
		Rows: []map[string]any{
			{"id": 1, "name": "Ann", "active": true, "tags": []any{"a", "b"}, "created": time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), "secret": "hidden"},
			{"id": 2, "name": nil, "active": false},
		},
	}
}

func TestWriteExport(t *testing.T) {
	tests := []struct {
		format, contentType, filename, body string
	}{
		{
			format:      "csv",
			contentType: "text/csv; charset=utf-8",
			filename:    "tenants.csv",
			body: "ID,Name,Active,Tags,Created\n" +
				"1,Ann,true,\"[\"\"a\"\",\"\"b\"\"]\",2024-05-06T07:08:09Z\n" +
				"2,,false,,\n",
		},
		{
			format:      "json",
			contentType: "application/vnd.tenantkit.export+json",
			filename:    "tenants.json",
			body: `[{"active":true,"created":"2024-05-06T07:08:09Z","id":1,"name":"Ann","tags":["a","b"]},` +
				`{"active":false,"created":null,"id":2,"name":null,"tags":null}]` + "\n",
		},
		{
			format:      "xml",
			contentType: "application/xml; charset=utf-8",
			filename:    "tenants.xml",
			body: `<?xml version="1.0" encoding="UTF-8"?>` + "\n<items>" +
				`<item><id>1</id><name>Ann</name><active>true</active><tags>[&#34;a&#34;,&#34;b&#34;]</tags><created>2024-05-06T07:08:09Z</created></item>` +
				`<item><id>2</id><name></name><active>false</active><tags></tags><created></created></item>` +
				"</items>\n",
		},
		{
			format:      "markdown",
			contentType: "text/markdown; charset=utf-8",
			filename:    "tenants.md",
			body: "| ID | Name | Active | Tags | Created |\n" +
				"| --- | --- | --- | --- | --- |\n" +
				"| 1 | Ann | true | [\"a\",\"b\"] | 2024-05-06T07:08:09Z |\n" +
				"| 2 |  | false |  |  |\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			is := is.New(t)
			rec := httptest.NewRecorder()
			is.NoErr(apikit.WriteExport(rec, tc.format, "tenants", sampleTable()))
			is.Equal(rec.Code, http.StatusOK)
			is.Equal(rec.Header().Get("Content-Type"), tc.contentType)
			is.Equal(rec.Header().Get("Content-Disposition"), `attachment; filename="`+tc.filename+`"`)
			is.Equal(rec.Body.String(), tc.body)
			is.True(!strings.Contains(rec.Body.String(), "hidden")) // only listed columns are exported
		})
	}
}

func TestWriteExportEmpty(t *testing.T) {
	cols := []apikit.ExportColumn{{Key: "id", Header: "ID"}}
	tests := map[string]string{
		"csv":      "ID\n",
		"json":     "[]\n",
		"xml":      xml.Header + "<items></items>\n",
		"markdown": "| ID |\n| --- |\n",
	}
	for format, want := range tests {
		t.Run(format, func(t *testing.T) {
			is := is.New(t)
			rec := httptest.NewRecorder()
			is.NoErr(apikit.WriteExport(rec, format, "x", apikit.ExportTable{Columns: cols}))
			is.Equal(rec.Body.String(), want)
		})
	}
}

func TestWriteExportFilename(t *testing.T) {
	tests := []struct{ base, want string }{
		{"tenants", `attachment; filename="tenants.csv"`},
		{"rule-sets_2024.01", `attachment; filename="rule-sets_2024.01.csv"`},
		{`a "b"/../c\d`, `attachment; filename="a__b__.._c_d.csv"`},
		{"élan\r\nX-Evil: 1", `attachment; filename="_lan__X-Evil__1.csv"`},
		{"", `attachment; filename="export.csv"`},
	}
	for _, tc := range tests {
		t.Run(tc.base, func(t *testing.T) {
			is := is.New(t)
			rec := httptest.NewRecorder()
			is.NoErr(apikit.WriteExport(rec, "csv", tc.base, apikit.ExportTable{}))
			is.Equal(rec.Header().Get("Content-Disposition"), tc.want)
		})
	}
}

func TestWriteExportUnknownFormat(t *testing.T) {
	is := is.New(t)
	rec := httptest.NewRecorder()
	err := apikit.WriteExport(rec, "pdf", "x", sampleTable())
	checkFields(t, err, map[string]string{"format": "must be one of csv, json, markdown, xml"})
	is.Equal(rec.Body.Len(), 0)                           // nothing written
	is.Equal(rec.Header().Get("Content-Disposition"), "") // no headers set
}

func TestWriteExportJSONError(t *testing.T) {
	is := is.New(t)
	rec := httptest.NewRecorder()
	err := apikit.WriteExport(rec, "json", "x", apikit.ExportTable{Columns: []apikit.ExportColumn{{Key: "c", Header: "C"}}, Rows: []map[string]any{{"c": make(chan int)}}})
	is.True(err != nil)
	is.True(!errors.Is(err, store.ErrInvalid))
	is.Equal(rec.Body.Len(), 0) // nothing written, the caller can still answer with an error
	is.Equal(rec.Header().Get("Content-Type"), "")
}

// readCSV parses an exported CSV body.
func readCSV(t *testing.T, body string) [][]string {
	t.Helper()
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("read csv: %v\n%s", err, body)
	}
	return records
}

func TestCSVInjection(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"=1+2", "'=1+2"},
		{"=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"},
		{"+1", "'+1"},
		{"-1", "'-1"},
		{"@SUM(A1:A2)", "'@SUM(A1:A2)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		{"\r", "'\r"},
		{-5, "'-5"}, // negative numbers are neutralised too
		{"abc-", "abc-"},
		{"a=b", "a=b"},
		{"", ""},
		{" =x", " =x"},
		{"'=x", "'=x"},
		{"plain text", "plain text"},
		{"line\nbreak", "line\nbreak"},
		{42, "42"},
	}
	table := apikit.ExportTable{Columns: []apikit.ExportColumn{{Key: "v", Header: "=Value"}, {Key: "k", Header: "Key"}}}
	for i, tc := range tests {
		table.Rows = append(table.Rows, map[string]any{"v": tc.in, "k": i})
	}
	is := is.New(t)
	rec := httptest.NewRecorder()
	is.NoErr(apikit.WriteExport(rec, "csv", "x", table))
	records := readCSV(t, rec.Body.String())
	is.Equal(len(records), len(tests)+1)
	is.Equal(records[0], []string{"'=Value", "Key"}) // headers are neutralised as well
	for i, tc := range tests {
		is.Equal(records[i+1][0], tc.want) // cell for tc.in
	}
}

func TestXMLExport(t *testing.T) {
	is := is.New(t)
	table := apikit.ExportTable{
		Columns: []apikit.ExportColumn{
			{Key: "first name", Header: "First name"},
			{Key: "1st", Header: "First"},
			{Key: "a:b", Header: "A:B"},
			{Key: "", Header: "Empty"},
			{Key: "ok-key.x_y", Header: "OK"},
			{Key: "-dash", Header: "Dash"},
			{Key: "naïve", Header: "Naive"},
		},
		Rows: []map[string]any{{
			"first name": "<b>Tom & \"Jerry\"</b>",
			"1st":        "line\nbreak",
			"a:b":        "ctrl\x00char",
			"":           "empty",
			"ok-key.x_y": 3.25,
			"-dash":      nil,
			"naïve":      true,
		}},
	}
	rec := httptest.NewRecorder()
	is.NoErr(apikit.WriteExport(rec, "xml", "x", table))

	var doc struct {
		XMLName xml.Name `xml:"items"`
		Items   []struct {
			Fields []struct {
				XMLName xml.Name
				Text    string `xml:",chardata"`
			} `xml:",any"`
		} `xml:"item"`
	}
	is.NoErr(xml.Unmarshal(rec.Body.Bytes(), &doc))
	is.Equal(len(doc.Items), 1)
	var names, texts []string
	for _, f := range doc.Items[0].Fields {
		names = append(names, f.XMLName.Local)
		texts = append(texts, f.Text)
	}
	is.Equal(names, []string{"first_name", "_1st", "a_b", "_", "ok-key.x_y", "_-dash", "na_ve"})
	is.Equal(texts, []string{"<b>Tom & \"Jerry\"</b>", "line\nbreak", "ctrl\uFFFDchar", "empty", "3.25", "", "true"})
}

func TestXMLName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"name", "name"},
		{"createdAt", "createdAt"},
		{"_x", "_x"},
		{"9", "_9"},
		{".x", "_.x"},
		{"a b", "a_b"},
		{"", "_"},
		{"<x>", "_x_"},
	}
	for _, tc := range tests {
		is.New(t).Equal(apikit.XMLName(tc.in), tc.want)
	}
}

func TestMarkdownCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a|b", `a\|b`},
		{"||", `\|\|`},
		{`a\|b`, `a\\\|b`},
		{"one\ntwo", "one<br>two"},
		{"one\r\ntwo\rthree", "one<br>two<br>three"},
		{"=1+2", "=1+2"}, // no formula neutralisation outside CSV
	}
	for _, tc := range tests {
		is.New(t).Equal(apikit.MarkdownCell(tc.in), tc.want)
	}
}

func TestMarkdownExportEscapes(t *testing.T) {
	is := is.New(t)
	rec := httptest.NewRecorder()
	table := apikit.ExportTable{
		Columns: []apikit.ExportColumn{{Key: "a", Header: "A|B"}, {Key: "b", Header: "B"}},
		Rows:    []map[string]any{{"a": "x|y", "b": "1\n2"}},
	}
	is.NoErr(apikit.WriteExport(rec, "markdown", "x", table))
	is.Equal(rec.Body.String(), "| A\\|B | B |\n| --- | --- |\n| x\\|y | 1<br>2 |\n")
}

// FuzzCSVCell checks that any string survives a CSV export and read-back with
// formula injection neutralised: the cell never starts with a dangerous
// character, and removing the added quote gives the input back.
func FuzzCSVCell(f *testing.F) {
	for _, s := range []string{"", "plain", "=1+2", "+", "-1", "@x", "\t", "\r", "\r\n", "'", "abc-", "a,b", `"q"`, "\n=x", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		rec := httptest.NewRecorder()
		table := apikit.ExportTable{
			Columns: []apikit.ExportColumn{{Key: "v", Header: "V"}, {Key: "end", Header: "End"}},
			Rows:    []map[string]any{{"v": in, "end": "end"}},
		}
		if err := apikit.WriteExport(rec, "csv", "fuzz", table); err != nil {
			t.Fatal(err)
		}
		records, err := csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
		if err != nil {
			t.Fatalf("read csv: %v", err)
		}
		if len(records) != 2 || len(records[1]) != 2 {
			t.Fatalf("records = %q", records)
		}
		got := records[1][0]
		if got != "" && strings.IndexByte("=+-@\t\r", got[0]) >= 0 {
			t.Fatalf("cell %q starts with a dangerous character", got)
		}
		// encoding/csv's reader turns \r\n inside a quoted field into \n.
		want := strings.ReplaceAll(in, "\r\n", "\n")
		if in != "" && strings.IndexByte("=+-@\t\r", in[0]) >= 0 {
			if !strings.HasPrefix(got, "'") {
				t.Fatalf("cell %q for %q is not neutralised", got, in)
			}
			got = got[1:]
		}
		if got != want {
			t.Fatalf("read back %q, want %q", got, want)
		}
	})
}
