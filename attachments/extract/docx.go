package extract

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// XML namespaces the DOCX reader knows: WordprocessingML (transitional and
// strict), markup compatibility, and the package relationships.
const (
	nsW       = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	nsWStrict = "http://purl.oclc.org/ooxml/wordprocessingml/main"
	nsMC      = "http://schemas.openxmlformats.org/markup-compatibility/2006"
)

// maxRelsBytes bounds the bytes read from _rels/.rels, which only names
// the main document part.
const maxRelsBytes = 1 << 20

// maxXMLDepth bounds the element nesting in document.xml.
const maxXMLDepth = 10000

// extractDOCX reads the main document part of a .docx (the target of the
// package's officeDocument relationship, word/document.xml by default) with
// archive/zip and encoding/xml, streaming: it stops once the output is full
// and refuses with ErrLimit past lim.MaxUnzippedBytes decompressed bytes.
func extractDOCX(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (string, error) {
	src := &guardedReaderAt{r: io.NewSectionReader(r, 0, size), ctx: ctx}
	zr, err := zip.NewReader(src, size)
	if err != nil {
		if e := src.ioErr(); e != nil {
			return "", e
		}
		return "", fmt.Errorf("%w: docx: not a zip archive: %v", ErrMalformed, err)
	}
	name, err := mainPart(ctx, zr, src)
	if err != nil {
		return "", err
	}
	f := findZipFile(zr, name)
	if f == nil {
		return "", fmt.Errorf("%w: docx: no %s in the archive", ErrMalformed, name)
	}
	if f.UncompressedSize64 > uint64(lim.MaxUnzippedBytes) {
		return "", fmt.Errorf("%w: docx: %s declares %d bytes decompressed, the limit is %d", ErrLimit, name, f.UncompressedSize64, lim.MaxUnzippedBytes)
	}
	rc, err := f.Open()
	if err != nil {
		return "", fmt.Errorf("%w: docx: opening %s: %v", ErrMalformed, name, err)
	}
	defer rc.Close()
	body := &budgetReader{r: rc, ctx: ctx, b: newBudget(lim.MaxUnzippedBytes, "docx: "+name+" decompressed")}
	out := newOutput(lim.MaxOutputBytes, true)
	err = docxText(body, out)
	if err != nil && !out.full {
		if e := src.ioErr(); e != nil {
			return "", e
		}
		if errors.Is(err, ErrLimit) || ctx.Err() != nil {
			return out.String(), err
		}
		return "", fmt.Errorf("%w: docx: %s: %v", ErrMalformed, name, err)
	}
	return out.String(), nil
}

// mainPart returns the name of the main document part from _rels/.rels,
// or word/document.xml when the package does not say.
func mainPart(ctx context.Context, zr *zip.Reader, src *guardedReaderAt) (string, error) {
	const def = "word/document.xml"
	f := findZipFile(zr, "_rels/.rels")
	if f == nil {
		return def, nil
	}
	rc, err := f.Open()
	if err != nil {
		return def, nil
	}
	defer rc.Close()
	var rels struct {
		Rel []struct {
			Type   string `xml:"Type,attr"`
			Target string `xml:"Target,attr"`
			Mode   string `xml:"TargetMode,attr"`
		} `xml:"Relationship"`
	}
	br := &budgetReader{r: rc, ctx: ctx, b: newBudget(maxRelsBytes, "docx: _rels/.rels")}
	if err := xml.NewDecoder(br).Decode(&rels); err != nil {
		if errors.Is(err, ErrLimit) || ctx.Err() != nil {
			return "", err
		}
		if e := src.ioErr(); e != nil {
			return "", e
		}
		return def, nil // unreadable relationships: try the usual name
	}
	for _, rel := range rels.Rel {
		if strings.HasSuffix(rel.Type, "/officeDocument") && !strings.EqualFold(rel.Mode, "External") && rel.Target != "" {
			return strings.TrimPrefix(path.Clean("/"+rel.Target), "/"), nil
		}
	}
	return def, nil
}

// findZipFile returns the archive's file called name (part names compare
// case-insensitively in OPC), or nil.
func findZipFile(zr *zip.Reader, name string) *zip.File {
	for _, f := range zr.File {
		if strings.EqualFold(strings.TrimPrefix(f.Name, "/"), name) {
			return f
		}
	}
	return nil
}

// docxText streams WordprocessingML from r into out: the text of w:t
// elements, w:tab as a tab, w:br and w:cr as a newline, w:noBreakHyphen as
// a hyphen, each paragraph ended by a newline. Deleted text (w:delText),
// field codes (w:instrText) and mc:Fallback content (the duplicate, legacy
// copy of text boxes) are skipped. It stops once out is full.
func docxText(r io.Reader, out *output) error {
	dec := xml.NewDecoder(r)
	depth := 0
	skipDepth := 0 // >0: inside skipped content, at this depth
	inText := false
	for !out.full {
		tok, err := dec.Token()
		if err == io.EOF {
			if depth != 0 {
				return errors.New("unexpected end of document")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxXMLDepth {
				return fmt.Errorf("%w: docx: elements nested deeper than %d", ErrLimit, maxXMLDepth)
			}
			if skipDepth > 0 {
				continue
			}
			space := t.Name.Space
			if space == nsMC && t.Name.Local == "Fallback" {
				skipDepth = depth
				continue
			}
			if space != nsW && space != nsWStrict {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = true
			case "delText", "instrText":
				skipDepth = depth
			case "tab", "ptab":
				out.writeString("\t")
			case "br", "cr":
				out.writeString("\n")
			case "noBreakHyphen":
				out.writeString("-")
			}
		case xml.EndElement:
			if skipDepth > 0 {
				if depth == skipDepth {
					skipDepth = 0
				}
				depth--
				continue
			}
			depth--
			space := t.Name.Space
			if space != nsW && space != nsWStrict {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				out.writeString("\n")
			}
		case xml.CharData:
			if inText && skipDepth == 0 {
				out.writeBytes(t)
			}
		}
	}
	return nil
}
