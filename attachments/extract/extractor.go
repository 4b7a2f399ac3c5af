package extract

import (
	"context"
	"io"
)

// Extractor is the attachments area's text extraction plug-in
// (attachments.Options.Extractor): plain text, PDFs' text layer and .docx
// documents through Extract, each bounded by Limits (zero fields take
// DefaultLimits').
//
//	opts.Extractor = extract.Extractor{}
type Extractor struct {
	// Limits bound each extraction.
	Limits Limits
}

// Extracts reports whether Extract reads files of that name and sniffed
// MIME type: KindOf is not None.
func (e Extractor) Extracts(fileName, mimeType string) bool {
	return KindOf(fileName, mimeType) != None
}

// Extract returns the text of the file r holds (size bytes), as the
// package function Extract does. found is false when the file holds no
// text: a PDF or .docx whose text is empty (a scanned PDF), or a kind
// without an extractor. An empty text file is found, with empty text.
func (e Extractor) Extract(ctx context.Context, r io.ReaderAt, size int64, fileName, mimeType string) (text string, found bool, err error) {
	text, ok, err := Extract(ctx, r, size, fileName, mimeType, e.Limits)
	return text, ok && (text != "" || KindOf(fileName, mimeType) == Text), err
}
