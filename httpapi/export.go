package httpapi

import (
	"bytes"
	"context"
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

	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
)

// exportColumn describes one exported column: Key looks the value up in a
// row, Header is the column title.
type exportColumn struct{ Key, Header string }

// exportTable is what a list handler hands to writeExport.
type exportTable struct {
	Columns []exportColumn
	Rows    []map[string]any
	// Progress, when set, is told how many rows are rendered, every
	// exportReportEvery rows and after the last.
	Progress func(rows int)
}

// exportReportEvery is how many rows an export renders between two
// progress reports.
const exportReportEvery = 500

// rowDone notes that row i (from 0) is rendered.
func (t exportTable) rowDone(i int) {
	if t.Progress != nil && ((i+1)%exportReportEvery == 0 || i+1 == len(t.Rows)) {
		t.Progress(i + 1)
	}
}

// exportProgressHeader carries the id of an export's progress job.
const exportProgressHeader = "X-Progress-Job-Id"

// exportProgressParam documents exportProgressHeader on a list that
// exports.
var exportProgressParam = Param{Name: exportProgressHeader,
	Description: "With format: the id of the progress job that tracks the export (GET /progress/jobs/{id}); absent without the progress area"}

// writeTrackedExport is writeExport as a progress job of jobType named
// jobName, when the Kit has the progress area (svc not nil; otherwise it
// is writeExport). The file is rendered and sent in the response, so the
// job lives as long as the request: it is created running once the rows
// are read (a refused request, such as a bad filter, leaves no job), with
// the row count as its total and its id in the X-Progress-Job-Id header;
// it reports the rows rendered every exportReportEvery rows (written at
// most once a second, progress.Reporter), is completed once the whole
// file is written to the response, and failed when rendering or sending
// fails (a download cut short shows "The download was interrupted"). It
// is not cancellable: a client stops an export by closing the request. A
// progress write that fails never fails the download.
func writeTrackedExport(w http.ResponseWriter, r *http.Request, svc *progress.Service, jobType, jobName, format, baseName string, t exportTable) error {
	if svc == nil {
		return writeExport(w, format, baseName, t)
	}
	if n := []rune(jobName); len(n) > progress.MaxNameLength {
		jobName = string(n[:progress.MaxNameLength-1]) + "…"
	}
	total := int64(len(t.Rows))
	_, err := svc.Run(r.Context(), progress.CreateInput{JobType: jobType, Name: jobName, Total: &total}, func(ctx context.Context, rep *progress.Reporter) error {
		w.Header().Set(exportProgressHeader, rep.ID())
		t.Progress = func(rows int) { _ = rep.Report(ctx, int64(rows), nil) } // Run writes the last count when it finishes
		return writeExport(w, format, baseName, t)
	})
	return err
}

// exportInterruptedError is writeExport's error when the file could not be
// sent whole (the client went away); its message is what the export's
// progress job shows.
type exportInterruptedError struct{ err error }

func (e exportInterruptedError) Error() string         { return "httpapi: export not sent: " + e.err.Error() }
func (e exportInterruptedError) Unwrap() error         { return e.err }
func (e exportInterruptedError) PublicMessage() string { return "The download was interrupted" }

// exportFormat describes one export format.
type exportFormat struct {
	ext, contentType string
	write            func(*bytes.Buffer, exportTable) error
}

// exportJSONContentType is the media type of format=json's file: JSON (an
// array of rows), but not application/json, which a list's page has, so
// that each media type of a list's 200 has one schema.
const exportJSONContentType = "application/vnd.tenantkit.export+json"

// exportFormats maps each accepted "format" value to its format.
var exportFormats = map[string]exportFormat{
	"csv":      {"csv", "text/csv; charset=utf-8", writeCSV},
	"json":     {"json", exportJSONContentType, writeJSON},
	"markdown": {"md", "text/markdown; charset=utf-8", writeMarkdown},
	"xml":      {"xml", "application/xml; charset=utf-8", writeXML},
}

// errExportFormat is the validation message for an unknown format.
const errExportFormat = "must be one of csv, json, markdown, xml"

// parseExportFormat returns the format requested by q's "format" parameter
// (lower-cased), or "" when it is absent or empty. An unknown value is a
// *store.ValidationError naming "format".
func parseExportFormat(q url.Values) (string, error) {
	f := strings.ToLower(q.Get("format"))
	if f == "" {
		return "", nil
	}
	if _, ok := exportFormats[f]; !ok {
		return "", store.Invalid("format", errExportFormat)
	}
	return f, nil
}

// writeExport writes t in format as a downloadable file named
// <baseName>.<ext> with status 200, Content-Type and Content-Disposition set.
// baseName is sanitised to [A-Za-z0-9._-]. The body is rendered before
// anything is written, so on an error (unknown format, value JSON cannot
// encode) nothing has been sent and the caller can still answer with an error.
func writeExport(w http.ResponseWriter, format, baseName string, t exportTable) error {
	f, ok := exportFormats[format]
	if !ok {
		return store.Invalid("format", errExportFormat)
	}
	var buf bytes.Buffer
	if err := f.write(&buf, t); err != nil {
		return fmt.Errorf("httpapi: export %s: %w", format, err)
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Disposition", `attachment; filename="`+exportFileName(baseName)+"."+f.ext+`"`)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return exportInterruptedError{err}
	}
	return nil
}

// exportFileName replaces every character outside [A-Za-z0-9._-] by '_'; an
// empty name becomes "export".
func exportFileName(name string) string {
	if name == "" {
		return "export"
	}
	return strings.Map(func(r rune) rune {
		if isASCIIAlnum(r) || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// isASCIIAlnum reports whether r is an ASCII letter or digit.
func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// cellText renders a value as text for csv, xml and markdown: nil → "",
// strings as is, bools as true/false, numbers without exponent, json.Number
// as is, time.Time as RFC 3339 (nanoseconds) in UTC; pointers are followed
// (nil → ""); anything else is compact JSON, with a JSON string (a named
// string type, a TextMarshaler) shown unquoted and JSON null shown as "".
func cellText(v any) string {
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
		return cellText(rv.Elem().Interface())
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

// writeCSV writes t as CSV: a header row, then one row per item, each cell
// passed through csvCell.
func writeCSV(buf *bytes.Buffer, t exportTable) error {
	cw := csv.NewWriter(buf)
	record := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		record[i] = csvCell(c.Header)
	}
	if err := cw.Write(record); err != nil {
		return err
	}
	for n, row := range t.Rows {
		for i, c := range t.Columns {
			record[i] = csvCell(cellText(row[c.Key]))
		}
		if err := cw.Write(record); err != nil {
			return err
		}
		t.rowDone(n)
	}
	cw.Flush()
	return cw.Error()
}

// csvCell neutralises spreadsheet formula injection (OWASP CSV injection):
// a cell starting with =, +, -, @, tab or carriage return gets a leading
// single quote.
func csvCell(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// writeJSON writes t as a JSON array with one object per row holding exactly
// the columns' keys (a missing value is null).
func writeJSON(buf *bytes.Buffer, t exportTable) error {
	items := make([]map[string]any, len(t.Rows))
	for i, row := range t.Rows {
		item := make(map[string]any, len(t.Columns))
		for _, c := range t.Columns {
			item[c.Key] = row[c.Key]
		}
		items[i] = item
		t.rowDone(i)
	}
	return json.NewEncoder(buf).Encode(items)
}

// writeXML writes t as <items><item><Key>text</Key>…</item>…</items> after
// the XML declaration, with element names made by xmlName.
func writeXML(buf *bytes.Buffer, t exportTable) error {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = xmlName(c.Key)
	}
	buf.WriteString(xml.Header)
	buf.WriteString("<items>")
	for n, row := range t.Rows {
		buf.WriteString("<item>")
		for i, c := range t.Columns {
			buf.WriteString("<" + names[i] + ">")
			if err := xml.EscapeText(buf, []byte(cellText(row[c.Key]))); err != nil {
				return err
			}
			buf.WriteString("</" + names[i] + ">")
		}
		buf.WriteString("</item>")
		t.rowDone(n)
	}
	buf.WriteString("</items>\n")
	return nil
}

// xmlName turns key into a valid XML element name: characters other than
// ASCII letters, digits, '_', '-' and '.' become '_', and '_' is prepended
// when the name does not start with a letter or '_'.
func xmlName(key string) string {
	name := strings.Map(func(r rune) rune {
		if isASCIIAlnum(r) || r == '_' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, key)
	if name == "" || !(name[0] == '_' || name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		name = "_" + name
	}
	return name
}

// writeMarkdown writes t as a GitHub-flavoured Markdown table.
func writeMarkdown(buf *bytes.Buffer, t exportTable) error {
	cells := make([]string, len(t.Columns))
	row := func() {
		buf.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	for i, c := range t.Columns {
		cells[i] = markdownCell(c.Header)
	}
	row()
	for i := range cells {
		cells[i] = "---"
	}
	row()
	for n, r := range t.Rows {
		for i, c := range t.Columns {
			cells[i] = markdownCell(cellText(r[c.Key]))
		}
		row()
		t.rowDone(n)
	}
	return nil
}

// markdownCellReplacer escapes backslashes and pipes and turns line breaks
// into <br>.
var markdownCellReplacer = strings.NewReplacer(`\`, `\\`, "|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

// markdownCell makes s safe inside a Markdown table cell.
func markdownCell(s string) string { return markdownCellReplacer.Replace(s) }
