package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"

	"github.com/ledongthuc/pdf"
)

// Fixed bounds of the PDF reader, beside Limits.
const (
	maxPageTreeDepth = 64    // nesting of /Pages nodes
	maxFormDepth     = 8     // form XObjects drawn inside forms
	maxFormsPerPage  = 1000  // form XObjects drawn on one page
	maxContentParts  = 10000 // streams in one page's /Contents array
	maxFonts         = 4096  // fonts kept in the per-document cache
	maxCMapBytes     = 1 << 20
)

// extractPDF reads the text layer of a PDF with github.com/ledongthuc/pdf,
// in a goroutine: the library cannot be interrupted, so when ctx ends
// first extractPDF returns at once and leaves the goroutine to finish on
// its own (see Extract).
func extractPDF(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (string, error) {
	g := &guardedReaderAt{r: io.NewSectionReader(r, 0, size), ctx: ctx, depthGuard: true}
	// The library accepts headers %PDF-1.0 to %PDF-1.7 only; a PDF 2.0
	// file is read alike, so it is shown a 1.7 header of the same length.
	head := make([]byte, 8)
	if n, _ := g.ReadAt(head, 0); n == len(head) && bytes.HasPrefix(head, []byte("%PDF-2.")) {
		g.header = []byte("%PDF-1.7")
	}
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if p := recover(); p != nil {
				res = result{"", fmt.Errorf("%w: pdf: %v", ErrMalformed, p)}
			}
			done <- res
		}()
		res.text, res.err = readPDF(ctx, g, size, lim)
	}()
	select {
	case res := <-done:
		if res.err != nil {
			if e := g.ioErr(); e != nil && ctx.Err() == nil {
				return "", e
			}
		}
		return res.text, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// pdfDoc is the state of one PDF's extraction.
type pdfDoc struct {
	ctx    context.Context
	lim    Limits
	out    *output
	budget *budget
	seed   maphash.Seed
	fonts  map[uint64]*fontInfo
	forms  int // forms drawn on the current page
}

func readPDF(ctx context.Context, g *guardedReaderAt, size int64, lim Limits) (string, error) {
	if err := checkXref(g, size); err != nil {
		return "", err
	}
	rd, err := pdf.NewReader(g, size)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", cerr
		}
		return "", fmt.Errorf("%w: pdf: %v", ErrMalformed, err)
	}
	d := &pdfDoc{
		ctx:    ctx,
		lim:    lim,
		out:    newOutput(lim.MaxOutputBytes, true),
		budget: newBudget(lim.MaxUnzippedBytes, "pdf: decoded content streams"),
		seed:   maphash.MakeSeed(),
		fonts:  map[uint64]*fontInfo{},
	}
	err = d.walk(rd.Trailer().Key("Root").Key("Pages"))
	return d.out.String(), err
}

// abortErr returns the error that ends the whole extraction (the context
// ended or the decoded-bytes budget is spent), or nil.
func (d *pdfDoc) abortErr() error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	if d.budget.left < 0 {
		return d.budget.err()
	}
	return nil
}

// treeNode is a /Pages node on the path from the root of the page tree.
type treeNode struct {
	kids   pdf.Value
	next   int
	res    pdf.Value // the inherited /Resources
	key    uint64    // hash of the node's dictionary
	parent *treeNode
	depth  int
}

// walk reads the pages of the page tree under root in order, without
// following /Parent: an explicit stack of /Pages nodes, each checked
// against its ancestors (a node whose dictionary equals an ancestor's would
// repeat the same subtree for ever), with bounds on depth, on the nodes
// visited and on the pages (Limits.MaxPages). A page that cannot be read
// is skipped; the document is malformed when no page gave text and one
// failed.
func (d *pdfDoc) walk(root pdf.Value) error {
	var firstErr error
	pages, visited := 0, 0
	maxVisits := 4*d.lim.MaxPages + 1024
	var top *treeNode
	visit := func(v pdf.Value, res pdf.Value) error {
		visited++
		if visited > maxVisits {
			return fmt.Errorf("%w: pdf: page tree has more than %d nodes for %d pages", ErrLimit, maxVisits, d.lim.MaxPages)
		}
		if v.Kind() != pdf.Dict {
			return nil
		}
		if r := v.Key("Resources"); r.Kind() == pdf.Dict {
			res = r
		}
		kids := v.Key("Kids")
		if typ := v.Key("Type").Name(); typ == "Pages" || typ != "Page" && kids.Kind() == pdf.Array {
			depth := 0
			if top != nil {
				depth = top.depth + 1
			}
			if depth >= maxPageTreeDepth {
				return fmt.Errorf("%w: pdf: page tree nested deeper than %d levels", ErrLimit, maxPageTreeDepth)
			}
			key := maphash.String(d.seed, v.String())
			for n := top; n != nil; n = n.parent {
				if n.key == key {
					return fmt.Errorf("%w: pdf: the page tree loops (a /Pages node is its own descendant)", ErrMalformed)
				}
			}
			top = &treeNode{kids: kids, res: res, key: key, parent: top, depth: depth}
			return nil
		}
		pages++
		if pages > d.lim.MaxPages {
			return fmt.Errorf("%w: pdf: more than %d pages", ErrLimit, d.lim.MaxPages)
		}
		if err := d.page(v, res); err != nil {
			if aerr := d.abortErr(); aerr != nil {
				return aerr
			}
			if errors.Is(err, ErrLimit) {
				return err
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("page %d: %w", pages, err)
			}
		}
		return nil
	}
	if err := visit(root, pdf.Value{}); err != nil {
		return err
	}
	for top != nil && !d.out.full {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		if top.next >= top.kids.Len() {
			top = top.parent
			continue
		}
		kid := top.kids.Index(top.next)
		top.next++
		if err := visit(kid, top.res); err != nil {
			return err
		}
	}
	if firstErr != nil && d.out.String() == "" {
		return fmt.Errorf("%w: pdf: %v", ErrMalformed, firstErr)
	}
	return nil
}

// page writes the text of one page.
func (d *pdfDoc) page(pg, res pdf.Value) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	d.out.boundary("\n\n")
	d.forms = 0
	contents := pg.Key("Contents")
	var rd io.Reader
	switch contents.Kind() {
	case pdf.Stream:
		s, err := d.openStream(contents)
		if err != nil {
			return err
		}
		rd = s
	case pdf.Array:
		rd = &multiStream{d: d, parts: contents}
	default:
		return nil
	}
	ts := newTextState(d)
	return ts.run(rd, res, 0)
}

// multiStream reads the streams of a /Contents array one after another,
// with a newline between them (streams divide at token boundaries).
type multiStream struct {
	d     *pdfDoc
	parts pdf.Value
	i     int
	cur   io.Reader
	err   error // the first stream that could not be opened
}

func (m *multiStream) Read(p []byte) (int, error) {
	for {
		if m.cur != nil {
			n, err := m.cur.Read(p)
			if err == io.EOF {
				m.cur = nil
				if n > 0 {
					return n, nil
				}
				continue
			}
			return n, err
		}
		if m.i >= m.parts.Len() || m.i >= maxContentParts {
			if m.err != nil {
				return 0, m.err
			}
			return 0, io.EOF
		}
		part := m.parts.Index(m.i)
		m.i++
		s, err := m.d.openStream(part)
		if err != nil {
			if aerr := m.d.abortErr(); aerr != nil {
				return 0, aerr
			}
			if m.err == nil {
				m.err = err
			}
			continue
		}
		m.cur = io.MultiReader(s, bytes.NewReader([]byte{'\n'}))
	}
}

// openStream returns the decoded data of stream v, drawn from the
// document's budget of decoded bytes. Only the encodings the library
// decodes are accepted (FlateDecode, with or without the PNG Up predictor,
// and ASCII85Decode), checked first, since it panics or allocates by what
// the file says otherwise.
func (d *pdfDoc) openStream(v pdf.Value) (rd io.Reader, err error) {
	if v.Kind() != pdf.Stream {
		return nil, errors.New("not a stream")
	}
	filter := v.Key("Filter")
	params := v.Key("DecodeParms")
	check := func(name string, param pdf.Value) error {
		switch name {
		case "ASCII85Decode":
			if len(param.Keys()) != 0 {
				return errors.New("ASCII85Decode with parameters")
			}
			return nil
		case "FlateDecode":
		default:
			return fmt.Errorf("unsupported filter %q", name)
		}
		pred := param.Key("Predictor")
		if pred.IsNull() {
			return nil
		}
		if pred.Kind() != pdf.Integer || pred.Int64() != 12 {
			return fmt.Errorf("unsupported predictor %v", pred)
		}
		if c := param.Key("Columns").Int64(); c < 0 || c > maxPredColumns {
			return fmt.Errorf("predictor /Columns %d out of range", c)
		}
		return nil
	}
	switch filter.Kind() {
	case pdf.Null:
	case pdf.Name:
		if err := check(filter.Name(), params); err != nil {
			return nil, err
		}
	case pdf.Array:
		if filter.Len() > 4 {
			return nil, errors.New("more than 4 filters")
		}
		for i := 0; i < filter.Len(); i++ {
			if err := check(filter.Index(i).Name(), params.Index(i)); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("bad filter %v", filter)
	}
	defer func() {
		if p := recover(); p != nil {
			rd, err = nil, fmt.Errorf("decoding stream: %v", p)
		}
	}()
	return &budgetReader{r: v.Reader(), ctx: d.ctx, b: d.budget}, nil
}
