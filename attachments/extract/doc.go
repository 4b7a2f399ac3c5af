// Package extract pulls bounded plain text out of uploaded files, for the
// attachments area's background job that fills an attachment's content:
// plain text files, the text layer of PDFs, and Word .docx documents, all
// parsed in-process by pure-Go code (no cgo, no external programs).
//
// Extract picks the extractor with KindOf and returns the text, ok false
// for kinds it has no extractor for (the caller stores null). Every
// extraction is bounded by Limits: input size, PDF pages, output size,
// decompressed bytes and time; and by fixed structural bounds (page-tree
// depth, nesting, font map sizes). Errors wrap ErrTooLarge, ErrLimit or
// ErrMalformed.
//
// # Decisions, and why
//
// Libraries. PDFs are opened with github.com/ledongthuc/pdf, a maintained
// (commits in 2026, with fuzz-driven hardening) pure-Go fork of rsc.io/pdf:
// it parses the file structure (cross-reference tables and streams, object
// streams, filters, RC4/AES encryption with an empty user password) and
// decodes fonts (standard encodings, /Differences, ToUnicode CMaps), which
// is what turning a content stream into text needs. pdfcpu (v0.15.0 is
// served) was the other candidate: it is a more thorough validator and
// editor but has no text extraction, only raw content streams, so the
// fonts' encodings and CMaps would have had to be written here.
// github.com/unidoc/unioffice is not used (paid licence). For .docx no
// served pure-Go reader is worth a dependency (baliance.com/gooxml is not
// served, ubavic/godocx lists no version), and the standard library does
// it well: archive/zip opens the package and encoding/xml streams
// word/document.xml token by token. Text files are decoded with
// golang.org/x/text, already a dependency, for its byte-order-mark
// handling (UTF-8, UTF-16LE, UTF-16BE).
//
// Hardening the PDF library. ledongthuc/pdf trusts the file: on hostile
// input it can loop for ever, recurse until the stack overflows, or
// allocate as much as a number in the file says; the last two are fatal
// errors in Go, which no recover catches and which would take the whole
// service down. So:
//
//   - Before the library sees a file, checkXref walks its cross-reference
//     sections as the library will and refuses /Prev loops, object numbers,
//     /Size, /Index and /W beyond bounds (object numbers at most one per
//     byte of the file and at most Acrobat's 8,388,607), unsupported
//     encodings, object streams listed as stored in object streams (the
//     library's lookup recursed on them until the stack overflowed), and
//     object streams whose /N, filters or predictor parameters are out of
//     bounds (the library decodes those without a check of ours between).
//     The /Size bomb and both recursions were fatal for the library alone:
//     testdata has them (xref-size.pdf, objstm-loop.pdf,
//     objstm-length-loop.pdf).
//   - The page tree is walked here, not by the library (whose Page(n)
//     loops for ever on a /Kids cycle and whose inherited-attribute lookup
//     follows /Parent without end): an explicit stack, a /Pages node equal
//     to one of its ancestors refused as a loop (ErrMalformed), depth at
//     most 64 and the nodes visited bounded (ErrLimit), resources inherited
//     downwards.
//   - Content streams are interpreted here, not by the library's
//     Interpret, with a tokenizer that keeps a few operands and bounded
//     strings and arrays, so memory does not grow with the stream; the
//     text state (Tm, Td, TD, T*, ', ", TJ, Tc, Tw, Tz, TL), the graphics
//     state (cm, q, Q) and form XObjects (Do, nested at most 8 deep) decide
//     where lines break and spaces go; inline image data is skipped.
//   - Streams are decoded by the library after checks of their filters
//     and predictor parameters, through a reader that draws on
//     Limits.MaxUnzippedBytes (flate bombs) and checks the deadline.
//   - Fonts are decoded by the library (pdf.Font.Encoder) after checks: a
//     ToUnicode CMap is read first and refused when larger than 1 MiB, when
//     a begin…/end… block's count is not matched by as many entries (the
//     library trusts the count and appends that many), or when it
//     redefines those operators; a /Differences array of more than 1024
//     entries is not used. Decoders run on 256-byte chunks, recovered from
//     panics. A Type0 font without a usable ToUnicode map gives no text
//     (its codes are glyph ids).
//   - Every read of the file goes through guardedReaderAt, which fails
//     once the deadline has passed and fails when called more than 400
//     frames deep: a recursion of the library over the file (an object
//     stream's /Length inside that object stream, say) stops with an error
//     long before it could overflow the stack.
//   - The library runs in a goroutine, recovered from panics. At the
//     deadline Extract returns; the goroutine finishes on its own at its
//     next read of the file or its next content operators, both of which
//     come within bounded work.
//
// Limits. Limits' zero fields take their defaults, so the caller can set
// only what it changes. MaxUnzippedBytes bounds, for a .docx, the bytes of
// document.xml (refused at once when the archive declares more, and
// archive/zip itself refuses a part larger than it declares) and for a PDF
// all decoded stream bytes. MaxOutputBytes truncates (not an error) and
// reading stops once the output is full. A PDF with more than MaxPages
// pages, and any other limit, gives ErrLimit; the text read before the
// limit is returned with it (not for a timeout of a PDF, whose goroutine
// may still be writing), for a caller that would rather keep part of a
// document than none. A context ended by the caller gives its own error,
// not ErrLimit: the file is not at fault and the job may run again. An
// error reading the file is returned as it is, for the same reason.
//
// Output. The text is valid UTF-8 (invalid bytes become U+FFFD, one per
// byte that starts no valid sequence) without NUL bytes (PostgreSQL text
// refuses them), trimmed; PDF and .docx text also loses the other C0
// control characters but tab and newline. PDF pages are joined with "\n\n"
// (pages without text leave no blank lines); .docx paragraphs with "\n",
// tabs and breaks kept, deleted revisions (w:delText), field codes
// (w:instrText) and mc:Fallback content (the legacy duplicate of text
// boxes) left out. Only word/document.xml is read: headers, footers,
// footnotes and comments are not.
//
// Kinds. The sniffed MIME type describes the bytes and the file name is
// the uploader's, so application/pdf and the .docx type win over the
// extension; the extension decides otherwise; text/* last. Office formats
// other than .docx and .msg never get an extractor, whatever they sniff
// as: their bytes would read as noise.
package extract
