package extract

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// The PDF library reads a file's cross-reference sections when it opens
// it, and trusts them: a huge /Size, object number, /Index range or /W
// width makes it allocate that much at once (a fatal out-of-memory error,
// not a panic), a /Prev chain that loops makes it loop for ever, and an
// object stream listed as stored in an object stream makes its object
// lookup recurse without end (a fatal stack overflow). checkXref walks the
// same sections first, the way the library will, and refuses such files.

// pdfMaxObjects bounds object numbers: Acrobat's limit on indirect
// objects, and never more than one object per byte of the file (plus some
// slack for tiny files).
func pdfMaxObjects(size int64) int64 {
	return min(8_388_607, 1024+size)
}

// Other bounds of the cross-reference check.
const (
	maxXrefSections = 1024    // sections in a /Prev chain
	maxXrefWidth    = 16      // bytes of one /W field
	maxPredColumns  = 1 << 16 // /Columns of a PNG predictor
	pdfTailBytes    = 100     // the library looks for startxref in the last 100 bytes
)

// xrefEntry mirrors the library's cross-reference entry.
type xrefEntry struct {
	id       uint32
	gen      uint16
	inStream bool
	stream   uint32
	offset   int64
}

func malformedf(format string, args ...any) error {
	return fmt.Errorf("%w: pdf: "+format, append([]any{ErrMalformed}, args...)...)
}

// checkXref checks the cross-reference sections of the PDF in ra (size
// bytes); see the comment at the top of this file.
func checkXref(ra io.ReaderAt, size int64) error {
	if size < pdfTailBytes {
		return malformedf("file too short")
	}
	tail := make([]byte, pdfTailBytes)
	if _, err := ra.ReadAt(tail, size-pdfTailBytes); err != nil && err != io.EOF {
		return err
	}
	tail = bytes.TrimRight(tail, "\r\n\t ")
	if !bytes.HasSuffix(tail, []byte("%%EOF")) {
		return malformedf("missing %%%%EOF")
	}
	i := findLastLine(tail, "startxref")
	if i < 0 {
		return malformedf("missing startxref")
	}
	pos := size - pdfTailBytes + int64(i)
	lx := newLexer(io.NewSectionReader(ra, pos, size-pos))
	if t := lx.next(); t.kind != tKeyword || t.s != "startxref" {
		return malformedf("missing startxref")
	}
	t := lx.next()
	if t.kind != tInt {
		return malformedf("startxref not followed by an integer")
	}
	if lx.err != nil {
		return lx.err
	}
	maxObj := pdfMaxObjects(size)
	off := t.i
	seen := map[int64]bool{}
	var table []xrefEntry
	var firstSize int64
	streams := false
	for n := 0; ; n++ {
		if off < 0 || off >= size {
			return malformedf("cross-reference section offset %d outside the file", off)
		}
		if seen[off] {
			return malformedf("cross-reference /Prev chain loops at offset %d", off)
		}
		if n >= maxXrefSections {
			return fmt.Errorf("%w: pdf: more than %d cross-reference sections", ErrLimit, maxXrefSections)
		}
		seen[off] = true
		lx := newLexer(io.NewSectionReader(ra, off, size-off))
		p := &parser{lx: lx}
		first := p.next()
		var prev any
		var err error
		switch {
		case first.kind == tKeyword && first.s == "xref" && (n == 0 || !streams):
			prev, err = checkXrefTable(p, maxObj)
		case first.kind == tInt && (n == 0 || streams):
			p.unread(first)
			streams = true
			table, firstSize, prev, err = checkXrefStream(ra, off, p, table, n == 0, firstSize, maxObj)
		default:
			err = malformedf("no cross-reference section at offset %d", off)
		}
		if lx.err != nil {
			return lx.err
		}
		if err != nil {
			return err
		}
		if prev == nil {
			break
		}
		next, ok := prev.(int64)
		if !ok {
			return malformedf("cross-reference /Prev is not an integer")
		}
		off = next
	}
	// The library finds an object stored in an object stream by loading
	// the object stream; when that one is listed as stored in an object
	// stream too, the lookup recurses for ever. The object streams
	// themselves are decoded by the library with no check of ours in
	// between, so their dictionaries are checked here.
	checked := map[uint32]bool{}
	for _, e := range table {
		if !e.inStream || checked[e.stream] {
			continue
		}
		s := e.stream
		checked[s] = true
		if int64(s) >= int64(len(table)) {
			continue // the library finds no such stream
		}
		c := table[s]
		if c.id != s || c.gen != 0 {
			continue // the library finds no such stream
		}
		if c.inStream {
			return malformedf("object stream %d is itself in an object stream", s)
		}
		if c.offset == 0 {
			continue
		}
		if err := checkObjStm(ra, size, table, c); err != nil {
			return err
		}
	}
	return nil
}

// Bounds of an object stream's dictionary.
const (
	maxObjStmN   = 1 << 20 // objects in one object stream
	maxFilters   = 4       // filters applied to one stream
	maxResolving = 4       // indirect references followed to reach a value
)

// checkObjStm checks the dictionary of the object stream at entry c: the
// library loops /N times looking for an object (without reading the file
// once the stream is exhausted) and decodes the stream as its /Filter and
// /DecodeParms say.
func checkObjStm(ra io.ReaderAt, size int64, table []xrefEntry, c xrefEntry) error {
	bad := func(what string) error {
		return malformedf("object stream %d: %s", c.id, what)
	}
	obj, err := readObjectAt(ra, size, c)
	if err != nil {
		return bad("unreadable")
	}
	d, ok := obj.(map[string]any)
	if !ok {
		return bad("not a stream")
	}
	// get returns d[key], following indirect references to objects stored
	// outside object streams (the library resolves them; a value stored in
	// an object stream is not expected here and refused).
	get := func(d map[string]any, key string) (any, error) {
		v := d[key]
		for range maxResolving {
			ref, ok := v.(pdfRef)
			if !ok {
				return v, nil
			}
			if ref.id < 0 || ref.id >= int64(len(table)) {
				return nil, nil
			}
			e := table[ref.id]
			if int64(e.id) != ref.id || int64(e.gen) != ref.gen || !e.inStream && e.offset == 0 {
				return nil, nil
			}
			if e.inStream {
				return nil, bad("/" + key + " stored in an object stream")
			}
			if v, err = readObjectAt(ra, size, e); err != nil {
				return nil, bad("/" + key + " unreadable")
			}
		}
		return nil, bad("/" + key + " through too many references")
	}
	for _, key := range []string{"N", "First"} {
		v, err := get(d, key)
		if err != nil {
			return err
		}
		if n, ok := v.(int64); v != nil && (!ok || n < 0 || n > maxObjStmN && key == "N") {
			return bad("/" + key + " out of range")
		}
	}
	filter, err := get(d, "Filter")
	if err != nil {
		return err
	}
	params, err := get(d, "DecodeParms")
	if err != nil {
		return err
	}
	filters, _ := filter.([]any)
	if filter != nil && filters == nil {
		filters = []any{filter}
		params = []any{params}
	}
	if len(filters) > maxFilters {
		return bad("too many filters")
	}
	plist, _ := params.([]any)
	for i, f := range filters {
		if _, ok := f.(pdfRef); ok {
			return bad("indirect filter name")
		}
		var p any
		if i < len(plist) {
			p = plist[i]
		}
		if _, ok := p.(pdfRef); ok {
			return bad("indirect decode parameters")
		}
		pd, _ := p.(map[string]any)
		pred, err := get(pd, "Predictor")
		if err != nil {
			return err
		}
		if pred == nil {
			continue
		}
		cols, err := get(pd, "Columns")
		if err != nil {
			return err
		}
		if n, ok := cols.(int64); cols != nil && (!ok || n < 0 || n > maxPredColumns) {
			return bad("predictor /Columns out of range")
		}
	}
	return nil
}

// readObjectAt reads the object of entry e, stored outside object streams
// (at e.offset): "id gen obj" and the object (a stream's dictionary for a
// stream).
func readObjectAt(ra io.ReaderAt, size int64, e xrefEntry) (any, error) {
	if e.offset < 0 || e.offset >= size {
		return nil, errSyntax
	}
	p := &parser{lx: newLexer(io.NewSectionReader(ra, e.offset, size-e.offset))}
	id, gen, kw := p.next(), p.next(), p.next()
	if id.kind != tInt || gen.kind != tInt || kw.kind != tKeyword || kw.s != "obj" {
		return nil, errSyntax
	}
	obj, err := p.object(0)
	if p.lx.err != nil {
		return nil, p.lx.err
	}
	return obj, err
}

// findLastLine is the library's: the index of the last s in buf that has a
// line break on both sides, or -1.
func findLastLine(buf []byte, s string) int {
	bs := []byte(s)
	end := len(buf)
	for {
		i := bytes.LastIndex(buf[:end], bs)
		if i <= 0 || i+len(bs) >= len(buf) {
			return -1
		}
		if (buf[i-1] == '\n' || buf[i-1] == '\r') && (buf[i+len(bs)] == '\n' || buf[i+len(bs)] == '\r') {
			return i
		}
		end = i
	}
}

// checkXrefTable reads a classic cross-reference table (after its "xref"
// keyword) and its trailer, and returns the trailer's /Prev.
func checkXrefTable(p *parser, maxObj int64) (any, error) {
	for {
		t := p.next()
		if t.kind == tKeyword && t.s == "trailer" {
			break
		}
		n := p.next()
		if t.kind != tInt || n.kind != tInt {
			return nil, malformedf("malformed cross-reference table")
		}
		if t.i < 0 || n.i < 0 || t.i > maxObj || n.i > maxObj-t.i {
			return nil, malformedf("cross-reference subsection %d %d out of range", t.i, n.i)
		}
		for range n.i {
			a, b, c := p.next(), p.next(), p.next()
			if a.kind != tInt || b.kind != tInt || c.kind != tKeyword || c.s != "f" && c.s != "n" {
				return nil, malformedf("malformed cross-reference table")
			}
		}
	}
	obj, err := p.object(0)
	if err != nil {
		return nil, malformedf("malformed trailer")
	}
	d, ok := obj.(map[string]any)
	if !ok {
		return nil, malformedf("cross-reference table not followed by a trailer dictionary")
	}
	return d["Prev"], nil
}

// checkXrefStream reads a cross-reference stream at off, adds its entries
// to table as the library does, and returns the table, the /Size of the
// first stream and the stream's /Prev.
func checkXrefStream(ra io.ReaderAt, off int64, p *parser, table []xrefEntry, first bool, firstSize, maxObj int64) ([]xrefEntry, int64, any, error) {
	bad := func(what string) ([]xrefEntry, int64, any, error) {
		return nil, 0, nil, malformedf("cross-reference stream at offset %d: %s", off, what)
	}
	id, gen, kw := p.next(), p.next(), p.next()
	if id.kind != tInt || gen.kind != tInt || kw.kind != tKeyword || kw.s != "obj" {
		return bad("not an object")
	}
	obj, err := p.object(0)
	if err != nil {
		return bad("unreadable dictionary")
	}
	d, ok := obj.(map[string]any)
	if !ok {
		return bad("not a dictionary")
	}
	if t := p.next(); t.kind != tKeyword || t.s != "stream" {
		return bad("not a stream")
	}
	lx := p.lx
	switch c, _ := lx.readByte(); c {
	case '\r':
		if c2, ok := lx.readByte(); ok && c2 != '\n' {
			lx.unreadByte()
		}
	case '\n':
	default:
		return bad("stream keyword not followed by a newline")
	}
	dataOff := off + lx.pos
	if d["Type"] != pdfName("XRef") {
		return bad("no /Type /XRef")
	}
	size, ok := d["Size"].(int64)
	if !ok || size < 0 || size > maxObj {
		return bad(fmt.Sprintf("/Size %v out of range", d["Size"]))
	}
	if first {
		firstSize = size
		table = make([]xrefEntry, size)
	} else if size > firstSize {
		return bad("/Size larger than the last section's")
	}
	index := []any{int64(0), size}
	if ix, ok := d["Index"].([]any); ok {
		index = ix
	}
	if len(index)%2 != 0 {
		return bad("odd /Index")
	}
	ranges := make([][2]int64, 0, len(index)/2)
	for i := 0; i < len(index); i += 2 {
		start, ok1 := index[i].(int64)
		n, ok2 := index[i+1].(int64)
		if !ok1 || !ok2 || start < 0 || n < 0 || start > maxObj || n > maxObj-start {
			return bad("/Index out of range")
		}
		ranges = append(ranges, [2]int64{start, n})
	}
	wa, ok := d["W"].([]any)
	if !ok || len(wa) < 3 {
		return bad("bad /W")
	}
	w := make([]int, len(wa))
	wtotal := 0
	for i, x := range wa {
		v, ok := x.(int64)
		if !ok || v < 0 || v > maxXrefWidth {
			return bad("bad /W")
		}
		w[i] = int(v)
		wtotal += int(v)
	}
	if wtotal == 0 {
		return bad("bad /W")
	}
	data, err := xrefStreamData(ra, dataOff, d)
	if err != nil {
		return bad(err.Error())
	}
	buf := make([]byte, wtotal)
	for _, rg := range ranges {
		for i := range rg[1] {
			if _, err := io.ReadFull(data, buf); err != nil {
				return bad("short data")
			}
			typ := decodeBE(buf[:w[0]])
			if w[0] == 0 {
				typ = 1
			}
			f2 := decodeBE(buf[w[0] : w[0]+w[1]])
			f3 := decodeBE(buf[w[0]+w[1] : w[0]+w[1]+w[2]])
			x := int(rg[0] + i)
			if x >= len(table) {
				table = append(table, make([]xrefEntry, x-len(table)+1)...)
			}
			if table[x].id != 0 || table[x].gen != 0 {
				continue
			}
			switch typ {
			case 0:
				table[x] = xrefEntry{gen: 65535}
			case 1:
				table[x] = xrefEntry{id: uint32(x), gen: uint16(f3), offset: int64(f2)}
			case 2:
				table[x] = xrefEntry{id: uint32(x), inStream: true, stream: uint32(f2), offset: int64(f3)}
			}
		}
	}
	return table, firstSize, d["Prev"], nil
}

// decodeBE is the library's decodeInt.
func decodeBE(b []byte) int {
	x := 0
	for _, c := range b {
		x = x<<8 | int(c)
	}
	return x
}

// xrefStreamData returns the decoded data of a cross-reference stream
// whose dictionary is d and whose data starts at off, decoded as the
// library does (its direct /Length, FlateDecode with or without the PNG Up
// predictor); other encodings are refused.
func xrefStreamData(ra io.ReaderAt, off int64, d map[string]any) (io.Reader, error) {
	length, _ := d["Length"].(int64)
	if length <= 0 {
		return bytes.NewReader(nil), nil
	}
	var rd io.Reader = io.NewSectionReader(ra, off, length)
	filter := d["Filter"]
	params := d["DecodeParms"]
	if a, ok := filter.([]any); ok {
		if len(a) != 1 {
			return nil, fmt.Errorf("unsupported /Filter")
		}
		filter = a[0]
		if pa, ok := params.([]any); ok && len(pa) > 0 {
			params = pa[0]
		} else {
			params = nil
		}
	}
	switch filter {
	case nil:
		return rd, nil
	case pdfName("FlateDecode"):
	default:
		return nil, fmt.Errorf("unsupported /Filter")
	}
	pd, _ := params.(map[string]any)
	pred, cols := pd["Predictor"], int64(0)
	switch pred {
	case nil:
	case int64(12):
		cols, _ = pd["Columns"].(int64)
		if cols < 0 || cols > maxPredColumns {
			return nil, fmt.Errorf("bad /Columns")
		}
	default:
		return nil, fmt.Errorf("unsupported /Predictor")
	}
	zr, err := zlib.NewReader(rd)
	if err != nil {
		return nil, err
	}
	if pred == nil {
		return zr, nil
	}
	return &pngUpReader{r: zr, hist: make([]byte, 1+cols), tmp: make([]byte, 1+cols)}, nil
}

// pngUpReader is the library's decoder of the PNG Up predictor.
type pngUpReader struct {
	r    io.Reader
	hist []byte
	tmp  []byte
	pend []byte
}

func (r *pngUpReader) Read(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if len(r.pend) > 0 {
			m := copy(b, r.pend)
			n += m
			b = b[m:]
			r.pend = r.pend[m:]
			continue
		}
		if _, err := io.ReadFull(r.r, r.tmp); err != nil {
			return n, err
		}
		if r.tmp[0] != 2 {
			return n, fmt.Errorf("malformed PNG-Up encoding")
		}
		for i, c := range r.tmp {
			r.hist[i] += c
		}
		r.pend = r.hist[1:]
	}
	return n, nil
}
