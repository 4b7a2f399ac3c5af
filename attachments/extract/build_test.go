package extract

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// This file builds the test files: well-formed PDFs written by hand with
// exact cross-reference offsets, .docx packages written with archive/zip,
// and the malformed variants the tests refuse. `go test -run
// TestGenerateTestdata -update ./attachments/extract` rewrites the files
// in testdata from these builders.

var update = flag.Bool("update", false, "rewrite the generated files in testdata")

// buildPDF writes a PDF whose objects are objs (object i+1 is objs[i]),
// with a classic cross-reference table and trailer (Root 1 0 R plus
// extraTrailer).
func buildPDF(objs []string, extraTrailer string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, extraTrailer, xref)
	return b.Bytes()
}

// stream returns a stream object with dictionary entries dict and data.
func stream(dict string, data []byte) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// flateStream returns a FlateDecode stream object of data.
func flateStream(dict string, data string) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write([]byte(data))
	w.Close()
	return stream("/Filter /FlateDecode "+dict, z.Bytes())
}

// helvetica is a simple font in WinAnsiEncoding.
const helvetica = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"

// samplePDF is a three-page PDF with a text layer: inherited resources,
// WinAnsi text, a TJ array, moves by Td, TD, T* and ', a Type0 font with a
// ToUnicode map placed with cm, compressed content split over two streams,
// a form XObject and an inline image.
func samplePDF() []byte {
	page1 := `BT /F1 24 Tf 72 720 Td (Quarterly report) Tj ET
BT /F1 12 Tf 72 690 Td (Revenue grew by 12% in the third quarter.) Tj
0 -16 Td (Caf\351 costs \2005 per cup.) Tj ET
BT /F1 12 Tf 72 650 Td [(Word) -50 (spacing) -400 (works)] TJ ET
BT /F1 12 Tf 72 630 Td (Left) Tj 200 0 Td (Right) Tj ET
BT /F1 12 Tf 14 TL 72 600 Td (Line one) Tj T* (Line two) Tj (Line three) ' ET`
	page2 := `BT /F2 16 Tf 72 700 Td <0001000200030004> Tj ET
q 1 0 0 1 72 650 cm BT /F2 16 Tf <001000110012> Tj ET Q`
	cmap := `/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Adobe-Identity-UCS def
/CMapType 2 def
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
4 beginbfchar
<0001> <03A9>
<0002> <4E2D>
<0003> <6587>
<0004> <2713>
endbfchar
1 beginbfrange
<0010> <0012> <0041>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end`
	image := "q 20 0 0 20 72 500 cm BI /W 2 /H 2 /CS /G /BPC 8 ID \x28\xff\x29\x00 EI Q"
	return buildPDF([]string{
		/* 1 */ "<< /Type /Catalog /Pages 2 0 R >>",
		/* 2 */ "<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 /Resources 6 0 R >>",
		/* 3 */ "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 7 0 R >>",
		/* 4 */ "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources 8 0 R /Contents 9 0 R >>",
		/* 5 */ "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [10 0 R 11 0 R] >>",
		/* 6 */ "<< /Font << /F1 12 0 R >> /XObject << /Fm1 13 0 R >> >>",
		/* 7 */ stream("", []byte(page1)),
		/* 8 */ "<< /Font << /F2 14 0 R >> >>",
		/* 9 */ stream("", []byte(page2)),
		/* 10 */ flateStream("", "BT /F1 12 Tf 72 700 Td"),
		/* 11 */ flateStream("", "(Compressed page) Tj ET\n"+image+"\nq 1 0 0 1 72 600 cm /Fm1 Do Q"),
		/* 12 */ helvetica,
		/* 13 */ stream("/Type /XObject /Subtype /Form /BBox [0 0 300 100] /Resources << /Font << /F1 12 0 R >> >>", []byte("BT /F1 12 Tf 0 0 Td (Text inside a form) Tj ET")),
		/* 14 */ "<< /Type /Font /Subtype /Type0 /BaseFont /NotoSans /Encoding /Identity-H /DescendantFonts [15 0 R] /ToUnicode 16 0 R >>",
		/* 15 */ "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /NotoSans /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor 17 0 R /DW 1000 >>",
		/* 16 */ stream("", []byte(cmap)),
		/* 17 */ "<< /Type /FontDescriptor /FontName /NotoSans /Flags 4 /FontBBox [0 -200 1000 900] /ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>",
	}, "")
}

// samplePDFText is the text Extract returns for samplePDF.
const samplePDFText = "Quarterly report\nRevenue grew by 12% in the third quarter.\nCafé costs €5 per cup.\nWordspacing works\nLeft Right\nLine one\nLine two\nLine three" +
	"\n\nΩ中文✓\nABC" +
	"\n\nCompressed page\nText inside a form"

// pagesPDF is a PDF of n pages, page i showing "Page i".
func pagesPDF(n int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", helvetica}
	var kids []string
	for i := 1; i <= n; i++ {
		kids = append(kids, fmt.Sprintf("%d 0 R", len(objs)+1))
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", len(objs)+2),
			stream("", fmt.Appendf(nil, "BT /F1 12 Tf 72 700 Td (Page %d) Tj ET", i)))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return buildPDF(objs, "")
}

// loopPDF is a PDF whose page tree loops: the second /Pages node lists
// itself and the root among its kids.
func loopPDF() []byte {
	return buildPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		"<< /Type /Page /Parent 2 0 R /Contents 5 0 R /Resources << /Font << /F1 6 0 R >> >> >>",
		"<< /Type /Pages /Parent 2 0 R /Kids [4 0 R 2 0 R] /Count 1 >>",
		stream("", []byte("BT /F1 12 Tf 72 700 Td (Before the loop) Tj ET")),
		helvetica,
	}, "")
}

// selfLoopPDF is a PDF whose only /Pages node is its own kid.
func selfLoopPDF() []byte {
	return buildPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
	}, "")
}

// xrefStreamPDF writes a PDF whose cross-reference stream (object id, no
// filter, W [1 w2 1]) has the given raw entries for objects 0..len-1, and
// whose trailer dictionary entries extra go in the stream's dictionary.
func xrefStreamPDF(body string, id int, entries [][3]int, extra string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	b.WriteString(body)
	off := b.Len()
	var data []byte
	for _, e := range entries {
		data = append(data, byte(e[0]), byte(e[1]>>8), byte(e[1]), byte(e[2]))
	}
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 2 1] /Root 1 0 R %s/Length %d >>\nstream\n", id, len(entries), extra, len(data))
	b.Write(data)
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", off)
	return b.Bytes()
}

// objStmLoopPDF lists object 1 as stored in object stream 2 and object 2
// as stored in object stream 1: the library's lookup of either recursed
// until the stack overflowed.
func objStmLoopPDF() []byte {
	return xrefStreamPDF(strings.Repeat("% padding to make the file long enough for a PDF trailer\n", 2), 3,
		[][3]int{{0, 0, 255}, {2, 2, 0}, {2, 1, 0}, {1, 9, 0}}, "")
}

// objStmLengthLoopPDF has an object stream whose /Length is an object
// stored in that object stream: each lookup of the length loads the
// stream, which looks up its length. The recursion reads the file at every
// turn, so the guarded reader's call-depth bound ends it.
func objStmLengthLoopPDF() []byte {
	body := "3 0 obj\n<< /Type /ObjStm /N 2 /First 8 /Length 4 0 R >>\nstream\n1 0 4 40 << /Type /Catalog /Pages 5 0 R >>    100\nendstream\nendobj\n" +
		strings.Repeat("% padding\n", 4)
	return xrefStreamPDF(body, 2, [][3]int{{0, 0, 255}, {2, 3, 0}, {1, 0, 0}, {1, 9, 0}, {2, 3, 1}}, "")
}

// xrefSizePDF has a cross-reference stream with a /Size of 10^11: the
// library allocated a table that large (a fatal out-of-memory error).
func xrefSizePDF() []byte {
	pad := strings.Repeat("% padding to make the file long enough for a PDF trailer\n", 2)
	data := xrefStreamPDF(pad, 1, [][3]int{{1, 9, 0}}, "")
	return bytes.Replace(data, []byte("/Size 1 "), []byte("/Size 99999999999 "), 1)
}

// objStmPDF has its catalog in an object stream whose dictionary has the
// entries dict.
func objStmPDF(dict string) []byte {
	body := "3 0 obj\n<< /Type /ObjStm /N 1 /First 4 " + dict + " /Length 50 >>\nstream\n1 0 << /Type /Catalog /Pages 4 0 R >>          \nendstream\nendobj\n" +
		strings.Repeat("% padding\n", 4)
	return xrefStreamPDF(body, 2, [][3]int{{0, 0, 255}, {2, 3, 0}, {1, 0, 0}, {1, 9, 0}}, "")
}

// docxFile is one file of a .docx package.
type docxFile struct{ name, body string }

// buildDOCX writes a zip archive of files, with a fixed time stamp.
func buildDOCX(files []docxFile) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		if err != nil {
			panic(err)
		}
		w.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

const (
	contentTypesXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`
	relsXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`
	documentRelsXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>`
	docStart = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" xmlns:v="urn:schemas-microsoft-com:vml" mc:Ignorable="wps"><w:body>`
	docEnd = `<w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr></w:body></w:document>`
)

// docxWith returns a .docx package whose body is body.
func docxWith(body string) []byte {
	return buildDOCX([]docxFile{
		{"[Content_Types].xml", contentTypesXML},
		{"_rels/.rels", relsXML},
		{"word/_rels/document.xml.rels", documentRelsXML},
		{"word/document.xml", docStart + body + docEnd},
	})
}

// sampleDOCX is a .docx with runs, a tab and a break, an empty paragraph,
// tracked changes, a field, a table and a text box (with its fallback copy).
func sampleDOCX() []byte {
	return docxWith(`<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Project plan</w:t></w:r></w:p>` +
		`<w:p><w:r><w:t xml:space="preserve">Split </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>runs</w:t></w:r><w:r><w:t xml:space="preserve"> join &amp; keep </w:t></w:r><w:r><w:t>“quotes”</w:t></w:r></w:p>` +
		`<w:p><w:r><w:t>Name</w:t></w:r><w:r><w:tab/><w:t>Zoë</w:t><w:br/><w:t>second line</w:t></w:r></w:p>` +
		`<w:p/>` +
		`<w:p><w:ins w:id="1" w:author="A" w:date="2026-01-02T00:00:00Z"><w:r><w:t xml:space="preserve">Page </w:t></w:r></w:ins><w:del w:id="2" w:author="A" w:date="2026-01-02T00:00:00Z"><w:r><w:delText>Deleted</w:delText></w:r></w:del>` +
		`<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> PAGE </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>1</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>` +
		`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Cell A</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Cell B</w:t></w:r></w:p></w:tc></w:tr></w:tbl>` +
		`<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wp:inline><wp:extent cx="1" cy="1"/><wp:docPr id="1" name="Text Box 1"/><a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"><wps:wsp><wps:txbx><w:txbxContent><w:p><w:r><w:t>Text box</w:t></w:r></w:p></w:txbxContent></wps:txbx><wps:bodyPr/></wps:wsp></a:graphicData></a:graphic></wp:inline></w:drawing></mc:Choice>` +
		`<mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>Text box</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r><w:r><w:t>After the box</w:t></w:r></w:p>`)
}

// sampleDOCXText is the text Extract returns for sampleDOCX.
const sampleDOCXText = "Project plan\nSplit runs join & keep “quotes”\nName\tZoë\nsecond line\n\nPage 1\nCell A\nCell B\nText box\nAfter the box"

// bombDOCX is a .docx whose document.xml decompresses to about n bytes of
// empty runs (no text), compressed to about n/1000 bytes.
func bombDOCX(n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range []docxFile{{"[Content_Types].xml", contentTypesXML}, {"_rels/.rels", relsXML}} {
		w, _ := zw.Create(f.name)
		w.Write([]byte(f.body))
	}
	w, _ := zw.Create("word/document.xml")
	w.Write([]byte(docStart + "<w:p>"))
	chunk := []byte(strings.Repeat("<w:r></w:r>", 1<<16))
	for written := 0; written < n; written += len(chunk) {
		w.Write(chunk)
	}
	w.Write([]byte("</w:p>" + docEnd))
	zw.Close()
	return b.Bytes()
}

// testdataFiles are the files TestGenerateTestdata writes.
func testdataFiles() map[string][]byte {
	return map[string][]byte{
		"sample.pdf":             samplePDF(),
		"pagetree-loop.pdf":      loopPDF(),
		"pagetree-self.pdf":      selfLoopPDF(),
		"objstm-loop.pdf":        objStmLoopPDF(),
		"objstm-length-loop.pdf": objStmLengthLoopPDF(),
		"xref-size.pdf":          xrefSizePDF(),
		"sample.docx":            sampleDOCX(),
		"invalid-utf8.txt":       []byte("\xef\xbb\xbf  Hello\x00 w\xc3\xb6rld \xff\xfe bad \xc3 bytes\r\nline two\t\n\n  "),
		"notes.md":               []byte("# Notes\n\n- first *point*\n- second point\n\n```go\nfmt.Println(\"hi\")\n```\n"),
		"data.csv":               []byte("\xef\xbb\xbfname,amount,city\r\n\"Müller, Jörg\",12.50,Zürich\r\nO'Brien,7,Cork\r\n"),
		"utf16le.txt":            utf16LE("\ufeffHello UTF-16 ✓\n"),
	}
}

func utf16LE(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}

func TestGenerateTestdata(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata")
	}
	for name, data := range testdataFiles() {
		if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
