package extract

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func extractDOCXBytes(t testing.TB, data []byte, lim Limits) (string, error) {
	t.Helper()
	text, ok, err := extractBytes(context.Background(), data, "f.docx", "application/zip", lim)
	if !ok {
		t.Fatal("ok false for a .docx")
	}
	assertClean(t, text, lim)
	assertClassified(t, err)
	return text, err
}

func TestDOCXZipBomb(t *testing.T) {
	is := is.New(t)
	data := bombDOCX(64 << 20) // 64 MiB of XML in about 70 KiB
	is.True(len(data) < 256<<10)
	r := &countingReader{r: bytes.NewReader(data)}
	_, ok, err := Extract(context.Background(), r, int64(len(data)), "bomb.docx", "", Limits{MaxUnzippedBytes: 1 << 20})
	is.True(ok)
	is.True(errors.Is(err, ErrLimit))
	is.True(strings.Contains(err.Error(), "declares 67"))
	is.True(r.n < int64(len(data))/4) // refused on the size the archive declares
}

// A part that decompresses to more than its declared size fails in
// archive/zip itself; the budget on the bytes read guards whatever gets
// past that.
func TestDOCXBudget(t *testing.T) {
	is := is.New(t)
	xml := docStart + "<w:p>" + strings.Repeat("<w:r></w:r>", 1<<18) + "</w:p>" + docEnd
	out := newOutput(1<<20, true)
	body := &budgetReader{r: strings.NewReader(xml), ctx: context.Background(), b: newBudget(1<<20, "document.xml")}
	err := docxText(body, out)
	is.True(errors.Is(err, ErrLimit))
	is.Equal(err.Error(), "extract: limit reached: document.xml exceeds 1048576 bytes")
}

func TestDOCXDeclaredSizeOverLimit(t *testing.T) {
	is := is.New(t)
	_, err := extractDOCXBytes(t, readTestdata(t, "sample.docx"), Limits{MaxUnzippedBytes: 100})
	is.True(errors.Is(err, ErrLimit))
	is.True(strings.Contains(err.Error(), "declares"))
}

func TestDOCXOutputLimit(t *testing.T) {
	is := is.New(t)
	text, err := extractDOCXBytes(t, readTestdata(t, "sample.docx"), Limits{MaxOutputBytes: 30})
	is.NoErr(err)
	is.Equal(text, "Project plan\nSplit runs join &") // 30 bytes
}

func TestDOCXMainPartFromRels(t *testing.T) {
	is := is.New(t)
	rels := strings.Replace(relsXML, "word/document.xml", "/word/main.xml", 1)
	data := buildDOCX([]docxFile{
		{"[Content_Types].xml", contentTypesXML},
		{"_rels/.rels", rels},
		{"word/document.xml", docStart + `<w:p><w:r><w:t>wrong part</w:t></w:r></w:p>` + docEnd},
		{"word/main.xml", docStart + `<w:p><w:r><w:t>main part</w:t></w:r></w:p>` + docEnd},
	})
	text, err := extractDOCXBytes(t, data, Limits{})
	is.NoErr(err)
	is.Equal(text, "main part")
}

func TestDOCXStrictNamespace(t *testing.T) {
	is := is.New(t)
	doc := `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main"><w:body><w:p><w:r><w:t>strict</w:t></w:r></w:p></w:body></w:document>`
	data := buildDOCX([]docxFile{{"word/document.xml", doc}})
	text, err := extractDOCXBytes(t, data, Limits{})
	is.NoErr(err)
	is.Equal(text, "strict")
}

func TestDOCXMalformed(t *testing.T) {
	for name, data := range map[string][]byte{
		"not a zip":   []byte("PK\x03\x04 not really"),
		"empty":       nil,
		"no document": buildDOCX([]docxFile{{"[Content_Types].xml", contentTypesXML}}),
		"bad xml":     buildDOCX([]docxFile{{"word/document.xml", docStart + "<w:p><w:t>unclosed"}}),
		"bad entity":  buildDOCX([]docxFile{{"word/document.xml", docStart + "<w:p><w:r><w:t>&bogus;</w:t></w:r></w:p>" + docEnd}}),
	} {
		_, err := extractDOCXBytes(t, data, Limits{})
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func TestDOCXControlCharacters(t *testing.T) {
	is := is.New(t)
	data := docxWith("<w:p><w:r><w:t>a&#x1;b&#9;c</w:t></w:r></w:p>")
	text, err := extractDOCXBytes(t, data, Limits{})
	// &#x1; is not allowed in XML 1.0: encoding/xml refuses it.
	if err == nil {
		is.Equal(text, "ab\tc")
	} else {
		is.True(errors.Is(err, ErrMalformed))
	}
}

func BenchmarkExtractDOCX(b *testing.B) {
	data := readTestdata(b, "sample.docx")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := extractBytes(context.Background(), data, "sample.docx", "application/zip", Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
