package extract

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzLimits keep each fuzz input quick.
var fuzzLimits = Limits{MaxPages: 20, MaxOutputBytes: 4096, Timeout: 2 * time.Second, MaxUnzippedBytes: 1 << 20}

// addSeeds adds the testdata files with one of exts as seeds.
func addSeeds(f *testing.F, exts ...string) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		for _, ext := range exts {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ext) {
				f.Add(readTestdata(f, e.Name()))
			}
		}
	}
}

func fuzzExtract(t *testing.T, data []byte, name, mime string) {
	text, ok, err := extractBytes(context.Background(), data, name, mime, fuzzLimits)
	if !ok {
		t.Fatal("ok false")
	}
	assertClean(t, text, fuzzLimits)
	assertClassified(t, err)
}

func FuzzExtractPDF(f *testing.F) {
	addSeeds(f, ".pdf")
	f.Add(pagesPDF(3))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzExtract(t, data, "f.pdf", "application/pdf")
	})
}

func FuzzExtractDOCX(f *testing.F) {
	addSeeds(f, ".docx")
	f.Add(docxWith(`<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t></w:r></w:p>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzExtract(t, data, "f.docx", "application/zip")
	})
}

// FuzzExtractDOCXXML fuzzes document.xml inside a well-formed package, which
// byte-level mutations of a zip archive seldom reach.
func FuzzExtractDOCXXML(f *testing.F) {
	f.Add(docStart + `<w:p><w:r><w:t>a</w:t><w:tab/><w:br/></w:r></w:p>` + docEnd)
	f.Add(docStart + `<w:p><w:r><mc:AlternateContent><mc:Fallback><w:t>x</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>` + docEnd)
	f.Fuzz(func(t *testing.T, xml string) {
		fuzzExtract(t, buildDOCX([]docxFile{{"word/document.xml", xml}}), "f.docx", "application/zip")
	})
}

func FuzzExtractText(f *testing.F) {
	addSeeds(f, ".txt", ".md", ".csv")
	f.Add([]byte("\xfe\xff\x00h\x00i"))
	f.Add([]byte("\xff\xfeh\x00\x00\xd8"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzExtract(t, data, "f.txt", "text/plain")
	})
}

// FuzzPDFContent fuzzes a page's content stream inside a well-formed PDF.
func FuzzPDFContent(f *testing.F) {
	f.Add("BT /F1 12 Tf 72 700 Td (Hello) Tj T* [(a) -300 (b)] TJ ET")
	f.Add("q 1 0 0 1 5 5 cm BT /F2 9 Tf <00010002> Tj ET Q /Fm1 Do BI /W 1 ID \x00 EI")
	f.Fuzz(func(t *testing.T, content string) {
		data := buildPDF([]string{
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Contents 4 0 R /Resources << /Font << /F1 5 0 R /F2 6 0 R >> /XObject << /Fm1 8 0 R >> >> >>",
			stream("", []byte(content)),
			helvetica,
			"<< /Type /Font /Subtype /Type0 /Encoding /Identity-H /ToUnicode 7 0 R >>",
			stream("", []byte("1 begincodespacerange <0000> <FFFF> endcodespacerange 1 beginbfchar <0001> <0041> endbfchar")),
			stream("/Subtype /Form /Resources << /XObject << /Fm1 8 0 R >> >>", []byte(content)),
		}, "")
		fuzzExtract(t, data, "f.pdf", "application/pdf")
	})
}

// FuzzPDFObjects fuzzes a PDF's objects ("N 0 obj ... endobj" text) with a
// cross-reference table rebuilt for each input, which byte-level mutations
// of a whole file seldom keep valid.
func FuzzPDFObjects(f *testing.F) {
	for _, data := range [][]byte{samplePDF(), loopPDF(), pagesPDF(2)} {
		f.Add(pdfBody(data))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzExtract(t, withXref(body), "f.pdf", "application/pdf")
	})
}

// pdfBody returns the objects of a PDF written by buildPDF.
func pdfBody(data []byte) []byte {
	start := bytes.IndexByte(data[9:], '\n') + 10
	end := bytes.LastIndex(data, []byte("xref\n"))
	return data[start:end]
}

// objRE finds object definitions at the start of a line.
var objRE = regexp.MustCompile(`(?m)^(\d{1,7}) 0 obj\b`)

// withXref returns a PDF of body with a cross-reference table listing the
// objects defined in it (the last definition of a number wins) and a
// trailer with Root 1 0 R.
func withXref(body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	base := b.Len()
	b.Write(body)
	b.WriteString("\n")
	offs := map[int]int{}
	size := 1
	for _, m := range objRE.FindAllSubmatchIndex(body, -1) {
		n, _ := strconv.Atoi(string(body[m[2]:m[3]]))
		offs[n] = base + m[0]
		size = max(size, n+1)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n", size)
	for i := range size {
		if off, ok := offs[i]; ok && i > 0 {
			fmt.Fprintf(&b, "%010d 00000 n \n", off)
		} else {
			b.WriteString("0000000000 65535 f \n")
		}
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", size, xref)
	return b.Bytes()
}

// TestWithXref checks the FuzzPDFObjects harness: sample.pdf's objects
// with a rebuilt table read as sample.pdf does.
func TestWithXref(t *testing.T) {
	text, _, err := extractBytes(context.Background(), withXref(pdfBody(samplePDF())), "f.pdf", "", Limits{})
	if err != nil || text != samplePDFText {
		t.Fatalf("got %q, %v", text, err)
	}
}
