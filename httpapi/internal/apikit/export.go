package apikit

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// ExportColumn describes one exported column: Key looks the value up in a
// row, Header is the column title.
type ExportColumn struct{ Key, Header string }

// ExportTable is what a list handler hands to writeExport.
type ExportTable struct {
	Columns []ExportColumn
	Rows    []map[string]any
	// Progress, when set, is told how many rows are rendered, every
	// exportReportEvery rows and after the last.
	Progress func(rows int)
}

// ExportInterruptedError is writeExport's error when the file could not be
// sent whole (the client went away); its message is what the export's
// progress job shows.
type ExportInterruptedError struct{ Err error }

func (e ExportInterruptedError) Error() string {
	return "httpapi: export not sent: " + e.Err.Error()
}

func (e ExportInterruptedError) Unwrap() error { return e.Err }

func (e ExportInterruptedError) PublicMessage() string { return "The download was interrupted" }

// ExportFormat describes one export format.
type ExportFormat struct {
	Ext, ContentType string
	Write            func(*bytes.Buffer, ExportTable) error
}

// exportJSONContentType is the media type of format=json's file: JSON (an
// array of rows), but not application/json, which a list's page has, so
// that each media type of a list's 200 has one schema.
const ExportJSONContentType = "application/vnd.tenantkit.export+json"

// exportFormats maps each accepted "format" value to its format.
var ExportFormats = map[string]ExportFormat{
	"csv":      {"csv", "text/csv; charset=utf-8", WriteCSV},
	"json":     {"json", ExportJSONContentType, WriteJSON},
	"markdown": {"md", "text/markdown; charset=utf-8", WriteMarkdown},
	"xml":      {"xml", "application/xml; charset=utf-8", WriteXML},
}

// errExportFormat is the validation message for an unknown format.
const ErrExportFormat = "must be one of csv, json, markdown, xml"

// ParseExportFormat returns the format requested by q's "format" parameter
// (lower-cased), or "" when it is absent or empty. An unknown value is a
// *store.ValidationError naming "format".
func ParseExportFormat(q url.Values) (string, error) {
	f := strings.ToLower(q.Get("format"))
	if f == "" {
		return "", nil
	}
	if _, ok := ExportFormats[f]; !ok {
		return "", store.Invalid("format", ErrExportFormat)
	}
	return f, nil
}

// WriteExport writes t in format as a downloadable file named
// <baseName>.<ext> with status 200, Content-Type and Content-Disposition set.
// baseName is sanitised to [A-Za-z0-9._-]. The body is rendered before
// anything is written, so on an error (unknown format, value JSON cannot
// encode) nothing has been sent and the caller can still answer with an error.
func WriteExport(w http.ResponseWriter, format, baseName string, t ExportTable) error {
	f, ok := ExportFormats[format]
	if !ok {
		return store.Invalid("format", ErrExportFormat)
	}
	var buf bytes.Buffer
	if err := f.Write(&buf, t); err != nil {
		return fmt.Errorf("httpapi: export %s: %w", format, err)
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Content-Disposition", `attachment; filename="`+ExportFileName(baseName)+"."+f.Ext+`"`)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return ExportInterruptedError{err}
	}
	return nil
}

// ExportFileName replaces every character outside [A-Za-z0-9._-] by '_'; an
// empty name becomes "export".
func ExportFileName(name string) string {
	if name == "" {
		return "export"
	}
	return strings.Map(func(r rune) rune {
		if IsASCIIAlnum(r) || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// IsASCIIAlnum reports whether r is an ASCII letter or digit.
func IsASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// CellText renders a value as text for csv, xml and markdown: nil → "",
// strings as is, bools as true/false, numbers without exponent, json.Number
// as is, time.Time as RFC 3339 (nanoseconds) in UTC; pointers are followed
// (nil → ""); anything else is compact JSON, with a JSON string (a named
// string type, a TextMarshaler) shown unquoted and JSON null shown as "".
func CellText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case json.Number:
		return x.String()
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		return CellText(rv.Elem().Interface())
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	var s string
	switch {
	case string(b) == "null":
		return ""
	case b[0] == '"' && json.Unmarshal(b, &s) == nil:
		return s
	}
	return string(b)
}

// WriteCSV writes t as CSV: a header row, then one row per item, each cell
// passed through csvCell.
func WriteCSV(buf *bytes.Buffer, t ExportTable) error {
	cw := csv.NewWriter(buf)
	record := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		record[i] = CSVCell(c.Header)
	}
	if err := cw.Write(record); err != nil {
		return err
	}
	for n, row := range t.Rows {
		for i, c := range t.Columns {
			record[i] = CSVCell(CellText(row[c.Key]))
		}
		if err := cw.Write(record); err != nil {
			return err
		}
		t.RowDone(n)
	}
	cw.Flush()
	return cw.Error()
}

// CSVCell neutralises spreadsheet formula injection (OWASP CSV injection):
// a cell starting with =, +, -, @, tab or carriage return gets a leading
// single quote.
func CSVCell(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// WriteJSON writes t as a JSON array with one object per row holding exactly
// the columns' keys (a missing value is null).
func WriteJSON(buf *bytes.Buffer, t ExportTable) error {
	items := make([]map[string]any, len(t.Rows))
	for i, row := range t.Rows {
		item := make(map[string]any, len(t.Columns))
		for _, c := range t.Columns {
			item[c.Key] = row[c.Key]
		}
		items[i] = item
		t.RowDone(i)
	}
	return json.NewEncoder(buf).Encode(items)
}

// WriteXML writes t as <items><item><Key>text</Key>…</item>…</items> after
// the XML declaration, with element names made by xmlName.
func WriteXML(buf *bytes.Buffer, t ExportTable) error {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = XMLName(c.Key)
	}
	buf.WriteString(xml.Header)
	buf.WriteString("<items>")
	for n, row := range t.Rows {
		buf.WriteString("<item>")
		for i, c := range t.Columns {
			buf.WriteString("<" + names[i] + ">")
			if err := xml.EscapeText(buf, []byte(CellText(row[c.Key]))); err != nil {
				return err
			}
			buf.WriteString("</" + names[i] + ">")
		}
		buf.WriteString("</item>")
		t.RowDone(n)
	}
	buf.WriteString("</items>\n")
	return nil
}

// XMLName turns key into a valid XML element name: characters other than
// ASCII letters, digits, '_', '-' and '.' become '_', and '_' is prepended
// when the name does not start with a letter or '_'.
func XMLName(key string) string {
	name := strings.Map(func(r rune) rune {
		if IsASCIIAlnum(r) || r == '_' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, key)
	if name == "" || !(name[0] == '_' || name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		name = "_" + name
	}
	return name
}

// WriteMarkdown writes t as a GitHub-flavoured Markdown table.
func WriteMarkdown(buf *bytes.Buffer, t ExportTable) error {
	cells := make([]string, len(t.Columns))
	row := func() {
		buf.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	for i, c := range t.Columns {
		cells[i] = MarkdownCell(c.Header)
	}
	row()
	for i := range cells {
		cells[i] = "---"
	}
	row()
	for n, r := range t.Rows {
		for i, c := range t.Columns {
			cells[i] = MarkdownCell(CellText(r[c.Key]))
		}
		row()
		t.RowDone(n)
	}
	return nil
}

// markdownCellReplacer escapes backslashes and pipes and turns line breaks
// into <br>.
var MarkdownCellReplacer = strings.NewReplacer(`\`, `\\`, "|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

// MarkdownCell makes s safe inside a Markdown table cell.
func MarkdownCell(s string) string { return MarkdownCellReplacer.Replace(s) }

// ExportReportEvery is how many rows an export renders between two
// progress reports.
const ExportReportEvery = 500

// RowDone notes that row i (from 0) is rendered.
func (t ExportTable) RowDone(i int) {
	if t.Progress != nil && ((i+1)%ExportReportEvery == 0 || i+1 == len(t.Rows)) {
		t.Progress(i + 1)
	}
}
