package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func extractPDFBytes(t testing.TB, data []byte, lim Limits) (string, error) {
	t.Helper()
	text, ok, err := extractBytes(context.Background(), data, "f.pdf", "application/pdf", lim)
	if !ok {
		t.Fatal("ok false for a PDF")
	}
	assertClean(t, text, lim)
	assertClassified(t, err)
	return text, err
}

// The page-tree loops are refused by the walk itself, well within the
// limits: a short Timeout bounds the test should they not be.
func TestPDFPageTreeLoop(t *testing.T) {
	lim := Limits{Timeout: 5 * time.Second}
	for _, file := range []string{"pagetree-loop.pdf", "pagetree-self.pdf"} {
		t.Run(file, func(t *testing.T) {
			is := is.New(t)
			_, err := extractPDFBytes(t, readTestdata(t, file), lim)
			is.True(errors.Is(err, ErrMalformed))
			is.True(strings.Contains(err.Error(), "page tree loops"))
		})
	}
}

func TestPDFPageTreeTooDeep(t *testing.T) {
	is := is.New(t)
	// A chain of 100 /Pages nodes, each the only kid of the one before.
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>"}
	for i := 2; i < 102; i++ {
		objs = append(objs, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 /Depth %d >>", i+1, i))
	}
	objs = append(objs, "<< /Type /Page >>")
	_, err := extractPDFBytes(t, buildPDF(objs, ""), Limits{Timeout: 5 * time.Second})
	is.True(errors.Is(err, ErrLimit))
	is.True(strings.Contains(err.Error(), "deeper than 64"))
}

// Before the check, this file made the library recurse until the stack
// overflowed, a fatal error that took the process down.
func TestPDFObjectStreamLoop(t *testing.T) {
	is := is.New(t)
	_, err := extractPDFBytes(t, readTestdata(t, "objstm-loop.pdf"), Limits{Timeout: 5 * time.Second})
	is.True(errors.Is(err, ErrMalformed))
	is.True(strings.Contains(err.Error(), "itself in an object stream"))
}

func TestPDFRecursionOverTheFile(t *testing.T) {
	is := is.New(t)
	_, err := extractPDFBytes(t, readTestdata(t, "objstm-length-loop.pdf"), Limits{Timeout: 5 * time.Second})
	is.True(errors.Is(err, ErrMalformed))
	is.True(strings.Contains(err.Error(), "recursion too deep"))
}

func TestPDFObjectStreamChecks(t *testing.T) {
	for _, c := range []struct{ dict, want string }{
		{"/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 1000000000000 >>", "/Columns out of range"},
		{"/Filter [/FlateDecode /FlateDecode /FlateDecode /FlateDecode /FlateDecode]", "too many filters"},
		{"/N 1000000000000000", "/N out of range"},
	} {
		is := is.New(t)
		data := objStmPDF(c.dict)
		_, err := extractPDFBytes(t, data, Limits{Timeout: 5 * time.Second})
		is.True(errors.Is(err, ErrMalformed))
		is.True(strings.Contains(err.Error(), c.want))
	}
	// Without those entries the same file reads (an empty page tree).
	is := is.New(t)
	text, err := extractPDFBytes(t, objStmPDF(""), Limits{})
	is.NoErr(err)
	is.Equal(text, "")
}

func TestPDFXrefChecks(t *testing.T) {
	pad := strings.Repeat("% padding to make the file long enough for a PDF trailer\n", 2)
	withPrev := func(prev string) []byte {
		// A classic table whose trailer's /Prev points at itself.
		b := buildPDF([]string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>"}, "")
		i := bytes.LastIndex(b, []byte("startxref\n"))
		off := strings.TrimSpace(strings.SplitN(string(b[i+len("startxref\n"):]), "\n", 2)[0])
		return bytes.Replace(b, []byte("/Root 1 0 R "), []byte("/Root 1 0 R /Prev "+strings.ReplaceAll(prev, "SELF", off)+" "), 1)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"prev loop", withPrev("SELF"), "loops"},
		{"huge index", xrefStreamPDF(pad, 1, [][3]int{{1, 9, 0}}, "/Index [4000000000 1] "), "/Index out of range"},
		{"wide W", bytes.Replace(xrefStreamPDF(pad, 1, [][3]int{{1, 9, 0}}, ""), []byte("/W [1 2 1]"), []byte("/W [1 2 99999999999]"), 1), "bad /W"},
		{"zero W", bytes.Replace(xrefStreamPDF(pad, 1, [][3]int{{1, 9, 0}}, ""), []byte("/W [1 2 1]"), []byte("/W [0 0 0]"), 1), "bad /W"},
		{"huge table subsection", bytes.Replace(buildPDF([]string{"<< /Type /Catalog >>"}, ""), []byte("xref\n0 2\n"), []byte("xref\n0 1\n0000000000 65535 f \n9000000000000 1\n"), 1), "out of range"},
		{"predictor columns", xrefStreamPDF(pad, 1, [][3]int{{1, 9, 0}}, "/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 1000000000000 >> "), "bad /Columns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			_, err := extractPDFBytes(t, c.data, Limits{Timeout: 5 * time.Second})
			is.True(errors.Is(err, ErrMalformed))
			is.True(strings.Contains(err.Error(), c.want)) // the check names it
		})
	}
	// The /Size of a cross-reference stream is bounded by the file's size.
	is := is.New(t)
	_, err := extractPDFBytes(t, readTestdata(t, "xref-size.pdf"), Limits{Timeout: 5 * time.Second})
	is.True(errors.Is(err, ErrMalformed))
	is.True(strings.Contains(err.Error(), "/Size"))
}

func TestPDFMaxPages(t *testing.T) {
	is := is.New(t)
	data := pagesPDF(5)
	text, err := extractPDFBytes(t, data, Limits{})
	is.NoErr(err)
	is.Equal(text, "Page 1\n\nPage 2\n\nPage 3\n\nPage 4\n\nPage 5")
	text, err = extractPDFBytes(t, data, Limits{MaxPages: 3})
	is.True(errors.Is(err, ErrLimit))
	is.True(strings.Contains(err.Error(), "more than 3 pages"))
	is.Equal(text, "Page 1\n\nPage 2\n\nPage 3") // the pages read
	_, err = extractPDFBytes(t, data, Limits{MaxPages: 5})
	is.NoErr(err)
}

func TestPDFOutputLimit(t *testing.T) {
	is := is.New(t)
	text, err := extractPDFBytes(t, pagesPDF(200), Limits{MaxOutputBytes: 20})
	is.NoErr(err)
	is.Equal(text, "Page 1\n\nPage 2\n\nPage") // cut at 20 bytes, trimmed
}

func TestPDFFlateBomb(t *testing.T) {
	is := is.New(t)
	// One page whose content stream decompresses to 8 MiB of operators that
	// show no text.
	content := strings.Repeat("0 0 m ", 8<<20/6)
	data := buildPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Contents 4 0 R >>",
		flateStream("", content),
	}, "")
	is.True(len(data) < 64<<10)
	_, err := extractPDFBytes(t, data, Limits{MaxUnzippedBytes: 1 << 20})
	is.True(errors.Is(err, ErrLimit))
	is.True(strings.Contains(err.Error(), "exceeds 1048576 bytes"))
}

// slowReader answers each read after a delay.
type slowReader struct {
	r     io.ReaderAt
	delay time.Duration
}

func (s slowReader) ReadAt(p []byte, off int64) (int, error) {
	time.Sleep(s.delay)
	return s.r.ReadAt(p, off)
}

func TestPDFTimeout(t *testing.T) {
	is := is.New(t)
	data := pagesPDF(50)
	r := slowReader{bytes.NewReader(data), 20 * time.Millisecond}
	text, ok, err := Extract(context.Background(), r, int64(len(data)), "f.pdf", "", Limits{Timeout: 100 * time.Millisecond})
	is.True(ok)
	is.True(errors.Is(err, ErrLimit))
	is.True(strings.Contains(err.Error(), "longer than 100ms"))
	is.Equal(text, "")
}

func TestPDFCallerDeadline(t *testing.T) {
	is := is.New(t)
	data := pagesPDF(50)
	r := slowReader{bytes.NewReader(data), 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _, err := Extract(ctx, r, int64(len(data)), "f.pdf", "", Limits{})
	is.True(errors.Is(err, context.DeadlineExceeded)) // the caller's, not a limit
	is.True(!errors.Is(err, ErrLimit))
}

func TestPDFCMapCountsChecked(t *testing.T) {
	is := is.New(t)
	// The library would append a billion entries for this count.
	cmap := "1 begincodespacerange <0000> <FFFF> endcodespacerange\n1000000000 beginbfchar <0001> <0041> endbfchar"
	data := buildPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		stream("", []byte("BT /F1 12 Tf (\x00\x01) Tj ET BT /F2 12 Tf 0 -20 Td (plain) Tj ET")),
		"<< /Type /Font /Subtype /Type0 /Encoding /Identity-H /ToUnicode 6 0 R >>",
		stream("", []byte(cmap)),
	}, "")
	text, err := extractPDFBytes(t, data, Limits{Timeout: 5 * time.Second})
	is.NoErr(err)
	is.Equal(text, "plain") // the font's map refused: its glyph ids give no text
}

func TestPDFFormDrawsItself(t *testing.T) {
	is := is.New(t)
	// The form shows "x" and draws itself twice: nesting stops at 8 levels.
	data := buildPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Contents 4 0 R /Resources 5 0 R >>",
		stream("", []byte("/Fm1 Do")),
		"<< /Font << /F1 6 0 R >> /XObject << /Fm1 7 0 R >> >>",
		helvetica,
		stream("/Type /XObject /Subtype /Form /Resources 5 0 R", []byte("BT /F1 12 Tf (x) Tj ET /Fm1 Do /Fm1 Do")),
	}, "")
	text, err := extractPDFBytes(t, data, Limits{Timeout: 5 * time.Second})
	is.NoErr(err)
	is.Equal(text, strings.Repeat("x", 255)) // 1+2+...+128 forms, all at the origin
}

func TestPDF20Header(t *testing.T) {
	is := is.New(t)
	data := bytes.Replace(pagesPDF(1), []byte("%PDF-1.4"), []byte("%PDF-2.0"), 1)
	text, err := extractPDFBytes(t, data, Limits{})
	is.NoErr(err)
	is.Equal(text, "Page 1")
}

func TestPDFMalformed(t *testing.T) {
	for _, data := range [][]byte{
		nil,
		[]byte("%PDF-1.4\n"),
		[]byte("not a pdf at all, just some text that is long enough to have a tail of a hundred bytes or so......"),
		pagesPDF(2)[:300],
	} {
		_, err := extractPDFBytes(t, data, Limits{})
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: err %v, want ErrMalformed", data, err)
		}
	}
}

func BenchmarkExtractPDF(b *testing.B) {
	data := readTestdata(b, "sample.pdf")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := extractBytes(context.Background(), data, "sample.pdf", "application/pdf", Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtractPDF200Pages(b *testing.B) {
	data := pagesPDF(200)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := extractBytes(context.Background(), data, "f.pdf", "application/pdf", Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
