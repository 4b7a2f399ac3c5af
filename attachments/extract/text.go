package extract

import (
	"context"
	"errors"
	"io"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// extractText reads a plain-text file. A byte-order mark picks the
// encoding (UTF-8, UTF-16LE or UTF-16BE) and is dropped; without one the
// bytes are taken as UTF-8. Reading stops once the output is full.
func extractText(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (string, error) {
	out := newOutput(lim.MaxOutputBytes, false)
	src := &readerAtErr{r: io.NewSectionReader(r, 0, size)}
	rd := transform.NewReader(src, unicode.BOMOverride(encoding.Nop.NewDecoder()))
	buf := make([]byte, 32<<10)
	for !out.full {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := rd.Read(buf)
		out.writeBytes(buf[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if src.err != nil {
				return "", &readError{src.err}
			}
			return "", err
		}
	}
	return out.String(), nil
}

// readerAtErr is an io.Reader over a section of the caller's file that
// remembers the error the file gave, to tell it from a decoding error.
type readerAtErr struct {
	r   *io.SectionReader
	err error
}

func (s *readerAtErr) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}
