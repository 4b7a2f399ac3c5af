package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
)

// Errors returned by Extract. Each error Extract returns wraps one of them
// (or, when the caller's ctx ended first, the context's error), with a
// message that says what was wrong.
var (
	// ErrTooLarge means the file is larger than Limits.MaxInputBytes; it
	// was not read.
	ErrTooLarge = errors.New("extract: file too large")
	// ErrLimit means a limit was hit while reading: Limits.MaxPages,
	// Limits.MaxUnzippedBytes, Limits.Timeout or one of the fixed
	// structural bounds (page-tree depth, font map size, ...). The
	// wrapping message names the limit.
	ErrLimit = errors.New("extract: limit reached")
	// ErrMalformed means the file cannot be parsed as its kind.
	ErrMalformed = errors.New("extract: malformed file")
)

// Limits bound one extraction. A zero or negative field takes its default
// (see DefaultLimits), so Limits{} is DefaultLimits().
type Limits struct {
	// MaxInputBytes: larger files are not read (ErrTooLarge); default 50 MiB.
	MaxInputBytes int64
	// MaxPages is the number of PDF pages read; a PDF with more pages gives
	// ErrLimit (with the text of the first MaxPages pages). Default 500.
	MaxPages int
	// MaxOutputBytes bounds the returned text: it is truncated at a UTF-8
	// boundary (not an error). Default 1 MiB.
	MaxOutputBytes int
	// Timeout bounds the whole extraction (ErrLimit when hit); default 30 s.
	Timeout time.Duration
	// MaxUnzippedBytes bounds the decompressed bytes read: for a .docx the
	// bytes read from word/document.xml, for a PDF the decoded bytes of its
	// content streams, forms and ToUnicode maps together. Past it the
	// extraction stops with ErrLimit (zip and flate bomb guard). Default
	// 64 MiB.
	MaxUnzippedBytes int64
}

// Default limits, as returned by DefaultLimits.
const (
	DefaultMaxInputBytes    = 50 << 20
	DefaultMaxPages         = 500
	DefaultMaxOutputBytes   = 1 << 20
	DefaultTimeout          = 30 * time.Second
	DefaultMaxUnzippedBytes = 64 << 20
)

// DefaultLimits returns the default limits: 50 MiB input, 500 PDF pages,
// 1 MiB output, 30 s, 64 MiB decompressed.
func DefaultLimits() Limits {
	return Limits{
		MaxInputBytes:    DefaultMaxInputBytes,
		MaxPages:         DefaultMaxPages,
		MaxOutputBytes:   DefaultMaxOutputBytes,
		Timeout:          DefaultTimeout,
		MaxUnzippedBytes: DefaultMaxUnzippedBytes,
	}
}

// WithDefaults returns l with its zero and negative fields replaced by
// their defaults (what Extract applies).
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxInputBytes <= 0 {
		l.MaxInputBytes = d.MaxInputBytes
	}
	if l.MaxPages <= 0 {
		l.MaxPages = d.MaxPages
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxUnzippedBytes <= 0 {
		l.MaxUnzippedBytes = d.MaxUnzippedBytes
	}
	return l
}

// Kind says which extractor a file gets.
type Kind int

// The kinds of file. None, the zero Kind, has no extractor.
const (
	None Kind = iota
	Text
	PDF
	DOCX
)

// String returns the kind's name: "none", "text", "pdf" or "docx".
func (k Kind) String() string {
	switch k {
	case Text:
		return "text"
	case PDF:
		return "pdf"
	case DOCX:
		return "docx"
	}
	return "none"
}

// Media types KindOf knows.
const (
	mimePDF  = "application/pdf"
	mimeDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
)

// noExtractor lists extensions that never get an extractor, whatever their
// sniffed type: office formats other than .docx (binary or zipped XML that
// would read as noise) and Outlook messages.
var noExtractor = map[string]bool{
	".doc": true, ".docm": true, ".dot": true, ".dotx": true,
	".xls": true, ".xlsx": true, ".xlsm": true,
	".ppt": true, ".pptx": true, ".pptm": true,
	".msg": true,
}

// textExt lists extensions read as plain text.
var textExt = map[string]bool{".txt": true, ".md": true, ".csv": true, ".log": true}

// KindOf says which extractor a file gets: Text, PDF, DOCX or None, decided
// from the file name's extension and the sniffed MIME type (compared
// case-insensitively, MIME parameters such as "; charset=utf-8" ignored):
//
//   - .doc .xlsx .xls .pptx .ppt .msg (and their macro/template variants)
//     → None, whatever the MIME type;
//   - MIME application/pdf → PDF and the docx MIME type → DOCX (the sniffed
//     type describes the bytes, so it wins over another extension);
//   - then by extension: .pdf → PDF, .docx → DOCX, .txt .md .csv .log → Text;
//   - then MIME text/* → Text;
//   - everything else → None.
func KindOf(fileName, mimeType string) Kind {
	ext := ""
	if i := strings.LastIndexByte(fileName, '.'); i >= 0 && !strings.ContainsAny(fileName[i:], `/\`) {
		ext = strings.ToLower(fileName[i:])
	}
	mt := strings.ToLower(strings.TrimSpace(mimeType))
	if parsed, _, err := mime.ParseMediaType(mt); err == nil {
		mt = parsed
	} else if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = strings.TrimSpace(mt[:i])
	}
	switch {
	case noExtractor[ext]:
		return None
	case mt == mimePDF:
		return PDF
	case mt == mimeDOCX:
		return DOCX
	case ext == ".pdf":
		return PDF
	case ext == ".docx":
		return DOCX
	case textExt[ext], strings.HasPrefix(mt, "text/"):
		return Text
	}
	return None
}

// errTimeout is the cause of the context Extract derives with
// Limits.Timeout, which tells its expiry from the caller's.
var errTimeout = errors.New("extract: timeout")

// Extract returns the text of the file held in r (size bytes), choosing the
// extractor with KindOf(fileName, mimeType). ok is false when the kind has
// no extractor (None): nothing is read and the caller stores null. For the
// other kinds ok is true, also when err is not nil.
//
//   - Text: the bytes as UTF-8, invalid bytes replaced by U+FFFD, NUL bytes
//     removed (the text is stored in SQL), a UTF-8 byte-order mark dropped,
//     UTF-16 decoded when the file starts with a UTF-16 byte-order mark;
//     trimmed.
//   - PDF: the text layer, pages joined with "\n\n", trimmed. Lines break
//     where the text moves to another line, and a space goes where the text
//     jumps forward on a line.
//   - DOCX: the paragraphs of word/document.xml joined with "\n", trimmed
//     (tabs and line breaks kept; deleted revisions, field codes and the
//     fallback copies of text boxes left out).
//
// The text is at most Limits.MaxOutputBytes long (truncated at a UTF-8
// boundary, then trimmed) and is valid UTF-8 without NUL bytes; PDF and DOCX
// text also has no other C0 control characters than tab and newline.
//
// Errors wrap ErrTooLarge, ErrLimit or ErrMalformed, or the error of ctx
// when ctx ends before Limits.Timeout does (the file is not at fault then;
// an error reading r is returned wrapped as it is, too). When the error
// wraps ErrLimit, text holds what was read before the limit was hit (the
// first MaxPages pages, say), except for the timeout of a PDF, where it is
// empty.
//
// Extract never panics: panics in the parsing libraries are recovered and
// reported as ErrMalformed. It returns by the time ctx or Limits.Timeout
// ends. The PDF library cannot be interrupted, so a PDF is parsed in a
// goroutine; when the deadline passes Extract returns at once and that
// goroutine finishes on its own, at its next read of r (every read checks
// the deadline first, so r is not read again once Extract has returned,
// but for a read already under way) or its next content-stream operators,
// both of which come within a bounded amount of work.
func Extract(ctx context.Context, r io.ReaderAt, size int64, fileName, mimeType string, lim Limits) (text string, ok bool, err error) {
	kind := KindOf(fileName, mimeType)
	if kind == None {
		return "", false, nil
	}
	lim = lim.WithDefaults()
	if size < 0 {
		return "", true, fmt.Errorf("%w: negative size %d", ErrMalformed, size)
	}
	if size > lim.MaxInputBytes {
		return "", true, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, size, lim.MaxInputBytes)
	}
	if err := ctx.Err(); err != nil {
		return "", true, fmt.Errorf("extract: %w", err)
	}
	tctx, cancel := context.WithTimeoutCause(ctx, lim.Timeout, errTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			text, err = "", fmt.Errorf("%w: %s: %v", ErrMalformed, kind, p)
		}
	}()
	switch kind {
	case Text:
		text, err = extractText(tctx, r, size, lim)
	case PDF:
		text, err = extractPDF(tctx, r, size, lim)
	case DOCX:
		text, err = extractDOCX(tctx, r, size, lim)
	}
	if err != nil {
		err = classify(ctx, tctx, kind, lim, err)
	}
	return text, true, err
}

// classify turns an extractor's error into Extract's: a context error
// becomes the caller's context error or ErrLimit for the timeout; errors
// that already wrap a sentinel (or an I/O error of r) stay as they are;
// anything else is ErrMalformed.
func classify(parent, tctx context.Context, kind Kind, lim Limits, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || tctx.Err() != nil {
		if perr := parent.Err(); perr != nil {
			return fmt.Errorf("extract: %s: %w", kind, context.Cause(parent))
		}
		if context.Cause(tctx) == errTimeout {
			return fmt.Errorf("%w: %s: extraction took longer than %s", ErrLimit, kind, lim.Timeout)
		}
	}
	var re *readError
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrLimit) || errors.Is(err, ErrMalformed) || errors.As(err, &re) {
		return err
	}
	return fmt.Errorf("%w: %s: %v", ErrMalformed, kind, err)
}

// readError is an error returned by the caller's io.ReaderAt (not io.EOF):
// the storage failed, not the file.
type readError struct{ err error }

func (e *readError) Error() string { return "extract: reading the file: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }
