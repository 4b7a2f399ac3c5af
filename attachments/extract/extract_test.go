package extract

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func extractBytes(ctx context.Context, data []byte, name, mime string, lim Limits) (string, bool, error) {
	return Extract(ctx, bytes.NewReader(data), int64(len(data)), name, mime, lim)
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		name, mime string
		want       Kind
	}{
		{"notes.txt", "text/plain; charset=utf-8", Text},
		{"README.MD", "", Text},
		{"data.csv", "application/octet-stream", Text},
		{"server.log", "", Text},
		{"page.html", "text/html; charset=utf-8", Text},
		{"noext", "text/plain", Text},
		{"report.pdf", "application/pdf", PDF},
		{"report.PDF", "", PDF},
		{"scan", "Application/PDF", PDF},
		{"mislabelled.txt", "application/pdf", PDF},
		{"letter.docx", "application/zip", DOCX},
		{"letter", mimeDOCX, DOCX},
		{"letter.doc", "application/msword", None},
		{"letter.doc", "text/plain; charset=utf-8", None},
		{"sheet.xlsx", "application/zip", None},
		{"sheet.xls", "", None},
		{"deck.pptx", "application/zip", None},
		{"deck.ppt", "", None},
		{"mail.msg", "application/octet-stream", None},
		{"photo.png", "image/png", None},
		{"archive.zip", "application/zip", None},
		{"", "", None},
		{"dir.txt/file", "application/octet-stream", None},
	} {
		if got := KindOf(c.name, c.mime); got != c.want {
			t.Errorf("KindOf(%q, %q) = %s, want %s", c.name, c.mime, got, c.want)
		}
	}
}

func TestDefaultLimits(t *testing.T) {
	is := is.New(t)
	d := DefaultLimits()
	is.Equal(d, Limits{MaxInputBytes: 50 << 20, MaxPages: 500, MaxOutputBytes: 1 << 20, Timeout: 30 * time.Second, MaxUnzippedBytes: 64 << 20})
	is.Equal(Limits{}.WithDefaults(), d)
	is.Equal(Limits{MaxPages: -1, MaxOutputBytes: 10}.WithDefaults().MaxOutputBytes, 10)
}

func TestExtractFiles(t *testing.T) {
	for _, c := range []struct {
		file, mime, want string
	}{
		{"sample.pdf", "application/pdf", samplePDFText},
		{"sample.docx", "application/zip", sampleDOCXText},
		{"invalid-utf8.txt", "text/plain; charset=utf-8", "Hello wörld \uFFFD\uFFFD bad \uFFFD bytes\r\nline two"},
		{"notes.md", "text/plain; charset=utf-8", "# Notes\n\n- first *point*\n- second point\n\n```go\nfmt.Println(\"hi\")\n```"},
		{"data.csv", "text/plain; charset=utf-8", "name,amount,city\r\n\"Müller, Jörg\",12.50,Zürich\r\nO'Brien,7,Cork"},
		{"utf16le.txt", "text/plain; charset=utf-16le", "Hello UTF-16 ✓"},
	} {
		t.Run(c.file, func(t *testing.T) {
			is := is.New(t)
			text, ok, err := extractBytes(context.Background(), readTestdata(t, c.file), c.file, c.mime, DefaultLimits())
			is.NoErr(err)
			is.True(ok)
			is.Equal(text, c.want)
		})
	}
}

func TestExtractNone(t *testing.T) {
	is := is.New(t)
	text, ok, err := Extract(context.Background(), failingReader{}, 10, "sheet.xlsx", "application/zip", Limits{})
	is.NoErr(err)
	is.True(!ok)
	is.Equal(text, "")
}

// failingReader fails every read.
type failingReader struct{}

var errStorage = errors.New("storage is down")

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, errStorage }

func TestExtractReadError(t *testing.T) {
	for _, name := range []string{"a.txt", "a.pdf", "a.docx"} {
		_, ok, err := Extract(context.Background(), failingReader{}, 1000, name, "", Limits{})
		if !ok || !errors.Is(err, errStorage) {
			t.Errorf("%s: ok %v, err %v; want the storage error", name, ok, err)
		}
	}
}

func TestExtractTooLarge(t *testing.T) {
	is := is.New(t)
	_, ok, err := Extract(context.Background(), failingReader{}, 51<<20, "a.pdf", "application/pdf", Limits{})
	is.True(ok)
	is.True(errors.Is(err, ErrTooLarge)) // refused before reading
	_, _, err = Extract(context.Background(), failingReader{}, 11, "a.txt", "", Limits{MaxInputBytes: 10})
	is.True(errors.Is(err, ErrTooLarge))
	_, _, err = Extract(context.Background(), failingReader{}, -1, "a.txt", "", Limits{})
	is.True(errors.Is(err, ErrMalformed))
}

func TestExtractCanceled(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"sample.pdf", "sample.docx", "notes.md"} {
		_, ok, err := extractBytes(ctx, readTestdata(t, name), name, "", Limits{})
		is.True(ok)
		is.True(errors.Is(err, context.Canceled))
		is.True(!errors.Is(err, ErrLimit))
	}
}

func TestTextOutputLimit(t *testing.T) {
	is := is.New(t)
	data := []byte("  " + strings.Repeat("é", 10) + "   x")
	text, _, err := extractBytes(context.Background(), data, "a.txt", "", Limits{MaxOutputBytes: 7})
	is.NoErr(err)
	is.Equal(text, "ééé") // 6 bytes: the fourth é would end at byte 8
	text, _, err = extractBytes(context.Background(), data, "a.txt", "", Limits{MaxOutputBytes: 21})
	is.NoErr(err)
	is.Equal(text, strings.Repeat("é", 10)) // trailing spaces cut, not the x after them
	text, _, err = extractBytes(context.Background(), data, "a.txt", "", Limits{MaxOutputBytes: 24})
	is.NoErr(err)
	is.Equal(text, strings.Repeat("é", 10)+"   x")
}

func TestTextStopsReadingWhenFull(t *testing.T) {
	is := is.New(t)
	r := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte("abc "), 1<<20))}
	text, _, err := Extract(context.Background(), r, 4<<20, "a.log", "", Limits{MaxOutputBytes: 100})
	is.NoErr(err)
	is.Equal(len(text), 99) // "abc abc ... abc" cut before a space
	is.True(r.n < 1<<20)    // 4 MiB file, far less read
}

// countingReader counts the bytes read.
type countingReader struct {
	r io.ReaderAt
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func TestTextTruncatedUTF8AtEnd(t *testing.T) {
	is := is.New(t)
	text, _, err := extractBytes(context.Background(), []byte("ok \xe2\x82"), "a.txt", "", Limits{})
	is.NoErr(err)
	is.Equal(text, "ok \uFFFD\uFFFD")
}

func assertClean(t testing.TB, text string, lim Limits) {
	t.Helper()
	if len(text) > lim.WithDefaults().MaxOutputBytes {
		t.Fatalf("output %d bytes, limit %d", len(text), lim.MaxOutputBytes)
	}
	if !utf8.ValidString(text) {
		t.Fatalf("output not valid UTF-8: %q", text)
	}
	if strings.ContainsRune(text, 0) {
		t.Fatalf("output has NUL: %q", text)
	}
	if strings.TrimSpace(text) != text {
		t.Fatalf("output not trimmed: %q", text)
	}
}

// assertClassified checks err is nil or wraps one of Extract's errors.
func assertClassified(t testing.TB, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrLimit) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
		t.Fatalf("unclassified error: %v", err)
	}
}
