package extract

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// This file interprets page content streams for their text: the text
// operators, the graphics state they depend on (cm, q, Q) and form
// XObjects. Its own tokenizer keeps a few operands and bounds strings and
// arrays, so memory stays small whatever the stream holds; fonts are
// decoded by the library (encodings, ToUnicode maps) after checks.

// Bounds of the content interpreter.
const (
	maxOperands   = 16      // operands kept before an operator (older ones dropped)
	maxArrayElems = 1 << 16 // elements kept of an array operand
	maxStateDepth = 256     // q nesting kept
	maxDictDepth  = 64      // nesting of dictionaries skipped in content
	decodeChunk   = 256     // bytes handed to a font decoder at once
)

// matrix is a PDF transformation matrix [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul returns m × n.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2],
		m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2],
		m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4],
		m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

// textState is the interpreter's state for one page.
type textState struct {
	d        *pdfDoc
	ctm      matrix
	stack    []matrix
	dropped  int // q beyond maxStateDepth, to match their Q
	tm, tlm  matrix
	font     *fontInfo
	tfs      float64 // font size
	tc, tw   float64 // character and word spacing
	th       float64 // horizontal scaling (1 = 100%)
	tl       float64 // leading
	havePrev bool    // text was shown on this page
	prevX    float64 // device position where the last text ended
	prevY    float64
	newline  bool // a line break was asked for (T*, ', ")
	ops      int
	arr      []token // the elements of the last array operand
}

func newTextState(d *pdfDoc) *textState {
	return &textState{d: d, ctm: identity, tm: identity, tlm: identity, th: 1}
}

// tArray marks an array operand; its elements are in textState.arr.
const tArray = tArrOpen

// run interprets the content stream rd with resources res; depth is the
// form nesting.
func (ts *textState) run(rd io.Reader, res pdf.Value, depth int) error {
	lx := newLexer(rd)
	var ops []token
	inArray := 0
	for !ts.d.out.full {
		t := lx.next()
		switch t.kind {
		case tEOF:
			if lx.err != nil && !errors.Is(lx.err, io.ErrUnexpectedEOF) {
				return lx.err
			}
			return nil // the end, or a truncated stream: keep what was read
		case tArrOpen:
			if inArray == 0 {
				ts.arr = ts.arr[:0]
			}
			inArray++
			continue
		case tArrClose:
			if inArray > 0 {
				if inArray--; inArray == 0 {
					ops = pushOperand(ops, token{kind: tArray})
				}
			}
			continue
		case tDictOpen:
			skipDict(lx)
			if inArray == 0 {
				ops = pushOperand(ops, token{kind: tDictOpen})
			}
			continue
		case tKeyword:
			if inArray > 0 {
				continue
			}
		default:
			if inArray > 0 {
				if len(ts.arr) < maxArrayElems {
					ts.arr = append(ts.arr, t)
				}
				continue
			}
			ops = pushOperand(ops, t)
			continue
		}
		ts.ops++
		if ts.ops%256 == 0 {
			if err := ts.d.ctx.Err(); err != nil {
				return err
			}
		}
		if err := ts.op(t.s, ops, res, lx, depth); err != nil {
			return err
		}
		ops = ops[:0]
	}
	return nil
}

func pushOperand(ops []token, t token) []token {
	if len(ops) == maxOperands {
		copy(ops, ops[1:])
		ops = ops[:len(ops)-1]
	}
	return append(ops, t)
}

// skipDict reads past a dictionary whose << has been read.
func skipDict(lx *lexer) {
	depth := 1
	for depth > 0 {
		switch lx.next().kind {
		case tEOF:
			return
		case tDictOpen:
			if depth++; depth > maxDictDepth {
				return
			}
		case tDictClose:
			depth--
		}
	}
}

// skipInlineImage reads past an inline image's data, after its ID
// operator: up to white space, "EI" and white space (or the end).
func skipInlineImage(lx *lexer) {
	prev := byte(' ')
	for {
		c, ok := lx.readByte()
		if !ok {
			return
		}
		if c == 'E' && isPDFSpace(prev) {
			c2, ok := lx.readByte()
			if !ok {
				return
			}
			if c2 == 'I' {
				c3, ok := lx.readByte()
				if !ok || isPDFSpace(c3) || isPDFDelim(c3) {
					if ok {
						lx.unreadByte()
					}
					return
				}
			}
			lx.unreadByte()
		}
		prev = c
	}
}

// num returns operand i of ops (counted from the end: 0 is the last) as a
// number; ok is false when it is missing or not a number.
func num(ops []token, i int) (float64, bool) {
	if i >= len(ops) {
		return 0, false
	}
	t := ops[len(ops)-1-i]
	if t.kind != tInt && t.kind != tReal {
		return 0, false
	}
	if math.IsNaN(t.f) || math.IsInf(t.f, 0) {
		return 0, false
	}
	return t.f, true
}

// nums returns the last n operands as numbers, in order.
func nums(ops []token, n int) ([]float64, bool) {
	out := make([]float64, n)
	for i := range n {
		v, ok := num(ops, n-1-i)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func lastOperand(ops []token, kind tokKind) (token, bool) {
	if len(ops) == 0 || ops[len(ops)-1].kind != kind {
		return token{}, false
	}
	return ops[len(ops)-1], true
}

// op runs one operator.
func (ts *textState) op(name string, ops []token, res pdf.Value, lx *lexer, depth int) error {
	switch name {
	case "q":
		if len(ts.stack) < maxStateDepth {
			ts.stack = append(ts.stack, ts.ctm)
		} else {
			ts.dropped++
		}
	case "Q":
		if ts.dropped > 0 {
			ts.dropped--
		} else if n := len(ts.stack); n > 0 {
			ts.ctm = ts.stack[n-1]
			ts.stack = ts.stack[:n-1]
		}
	case "cm":
		if v, ok := nums(ops, 6); ok {
			ts.ctm = matrix(v).mul(ts.ctm)
		}
	case "BT":
		ts.tm, ts.tlm = identity, identity
	case "Tf":
		if size, ok := num(ops, 0); ok && len(ops) >= 2 && ops[len(ops)-2].kind == tName {
			ts.tfs = size
			ts.font = ts.d.font(res, ops[len(ops)-2].s)
		}
	case "Tc":
		if v, ok := num(ops, 0); ok {
			ts.tc = v
		}
	case "Tw":
		if v, ok := num(ops, 0); ok {
			ts.tw = v
		}
	case "Tz":
		if v, ok := num(ops, 0); ok {
			ts.th = v / 100
		}
	case "TL":
		if v, ok := num(ops, 0); ok {
			ts.tl = v
		}
	case "Td", "TD":
		if v, ok := nums(ops, 2); ok {
			if name == "TD" {
				ts.tl = -v[1]
			}
			ts.tlm = translate(v[0], v[1]).mul(ts.tlm)
			ts.tm = ts.tlm
		}
	case "Tm":
		if v, ok := nums(ops, 6); ok {
			ts.tlm = matrix(v)
			ts.tm = ts.tlm
		}
	case "T*":
		ts.nextLine()
	case "Tj":
		if t, ok := lastOperand(ops, tString); ok {
			ts.show(t.s)
		}
	case "'":
		ts.nextLine()
		if t, ok := lastOperand(ops, tString); ok {
			ts.show(t.s)
		}
	case "\"":
		if len(ops) >= 3 {
			if v, ok := num(ops, 2); ok {
				ts.tw = v
			}
			if v, ok := num(ops, 1); ok {
				ts.tc = v
			}
		}
		ts.nextLine()
		if t, ok := lastOperand(ops, tString); ok {
			ts.show(t.s)
		}
	case "TJ":
		if _, ok := lastOperand(ops, tArray); !ok {
			return nil
		}
		for _, e := range ts.arr {
			switch e.kind {
			case tString:
				ts.show(e.s)
			case tInt, tReal:
				if !math.IsNaN(e.f) && !math.IsInf(e.f, 0) {
					ts.tm = translate(-e.f/1000*ts.tfs*ts.th, 0).mul(ts.tm)
				}
			}
			if ts.d.out.full {
				break
			}
		}
	case "ID":
		skipInlineImage(lx)
	case "Do":
		if t, ok := lastOperand(ops, tName); ok {
			return ts.form(res, t.s, depth)
		}
	}
	return nil
}

// nextLine moves to the start of the next line (T*).
func (ts *textState) nextLine() {
	ts.tlm = translate(0, -ts.tl).mul(ts.tlm)
	ts.tm = ts.tlm
	ts.newline = true
}

// form draws the form XObject called name, if it is one: its content with
// its own resources (or the page's), under its /Matrix.
func (ts *textState) form(res pdf.Value, name string, depth int) error {
	xo := res.Key("XObject").Key(name)
	if xo.Kind() != pdf.Stream || xo.Key("Subtype").Name() != "Form" || depth >= maxFormDepth {
		return nil
	}
	if ts.d.forms++; ts.d.forms > maxFormsPerPage {
		return fmt.Errorf("%w: pdf: more than %d forms drawn on a page", ErrLimit, maxFormsPerPage)
	}
	rd, err := ts.d.openStream(xo)
	if err != nil {
		return ts.d.abortErr() // an unreadable form is skipped
	}
	fres := xo.Key("Resources")
	if fres.Kind() != pdf.Dict {
		fres = res
	}
	saved := *ts
	saved.stack = append([]matrix(nil), ts.stack...)
	if m := xo.Key("Matrix"); m.Len() == 6 {
		var v matrix
		for i := range v {
			v[i] = m.Index(i).Float64()
		}
		ts.ctm = v.mul(ts.ctm)
	}
	err = ts.run(rd, fres, depth+1)
	// The form's graphics and text state end with it; where text was
	// shown stays.
	havePrev, px, py := ts.havePrev, ts.prevX, ts.prevY
	ops := ts.ops
	*ts = saved
	ts.havePrev, ts.prevX, ts.prevY, ts.ops = havePrev, px, py, ops
	if err != nil {
		if aerr := ts.d.abortErr(); aerr != nil || errors.Is(err, ErrLimit) {
			return err
		}
	}
	return nil
}

// show writes the text of string operand s: first a line break when the
// text starts on another line than the last text ended (or T* asked for
// one), or a space when it starts a gap away from it on the same line;
// then the decoded text; then it advances the text matrix by the text's
// width.
func (ts *textState) show(s string) {
	out := ts.d.out
	trm := ts.tm.mul(ts.ctm)
	x, y := trm[4], trm[5]
	size := math.Abs(ts.tfs) * math.Hypot(trm[2], trm[3])
	if size < 1 || math.IsNaN(size) || math.IsInf(size, 0) {
		size = 1
	}
	if ts.havePrev {
		switch dx, dy := x-ts.prevX, y-ts.prevY; {
		case ts.newline || math.Abs(dy) > size/2:
			out.writeString("\n")
		case (dx > 0.15*size || dx < -size) && !out.lastIsSpace():
			out.writeString(" ")
		}
	}
	ts.newline = false
	f := ts.font
	if f == nil {
		f = rawFont
	}
	out.writeString(f.decode(ts.d, s))
	// Advance by the glyphs' widths.
	adv := 0.0
	step := 1
	if f.twoByte {
		step = 2
	}
	for i := 0; i+step <= len(s); i += step {
		code := int(s[i])
		if step == 2 {
			code = code<<8 | int(s[i+1])
		}
		w := f.width(code)*ts.tfs + ts.tc
		if step == 1 && code == ' ' {
			w += ts.tw
		}
		adv += w * ts.th
	}
	ts.tm = translate(adv, 0).mul(ts.tm)
	end := ts.tm.mul(ts.ctm)
	ts.prevX, ts.prevY = end[4], end[5]
	ts.havePrev = true
}

// fontInfo is what the interpreter knows of a font.
type fontInfo struct {
	enc     pdf.TextEncoding // nil: no usable encoding
	twoByte bool             // codes are two bytes (a Type0 font)
	first   int              // simple fonts: /FirstChar
	widths  []float64        // simple fonts: /Widths, in 1/1000 em
	cidW    map[int]float64  // Type0: /W of the descendant font
	dw      float64          // default width, in 1/1000 em
}

// rawFont stands for a missing font: bytes taken as Latin-1.
var rawFont = &fontInfo{dw: 500}

// width returns the width of code in em.
func (f *fontInfo) width(code int) float64 {
	if f.twoByte {
		if w, ok := f.cidW[code]; ok {
			return w / 1000
		}
		return f.dw / 1000
	}
	if i := code - f.first; i >= 0 && i < len(f.widths) {
		return f.widths[i] / 1000
	}
	return f.dw / 1000
}

// decode returns the text of the codes in s.
func (f *fontInfo) decode(d *pdfDoc, s string) string {
	if f.enc == nil {
		if f.twoByte {
			return "" // glyph ids without a map to text
		}
		b := make([]rune, 0, len(s))
		for i := 0; i < len(s); i++ {
			b = append(b, rune(s[i]))
		}
		return string(b)
	}
	var b []byte
	for len(s) > 0 {
		n := min(len(s), decodeChunk)
		b = append(b, safeDecode(f.enc, s[:n])...)
		s = s[n:]
		if len(s) > 0 && d.ctx.Err() != nil {
			break
		}
	}
	return string(b)
}

// safeDecode decodes with enc, recovering the library's panics on
// malformed maps (then nothing is decoded).
func safeDecode(enc pdf.TextEncoding, s string) (text string) {
	defer func() {
		if recover() != nil {
			text = ""
		}
	}()
	t := enc.Decode(s)
	if !utf8.ValidString(t) {
		return string([]rune(t))
	}
	return t
}

// font returns the font called name in res, from the document's cache.
func (d *pdfDoc) font(res pdf.Value, name string) *fontInfo {
	fd := res.Key("Font").Key(name)
	if fd.Kind() != pdf.Dict {
		return nil
	}
	key := maphash.String(d.seed, fd.String())
	if f, ok := d.fonts[key]; ok {
		return f
	}
	f := d.loadFont(fd)
	if len(d.fonts) < maxFonts {
		d.fonts[key] = f
	}
	return f
}

// loadFont reads a font dictionary. Its encoding comes from the library
// (pdf.Font.Encoder), after checks of what would make the library
// misbehave: a huge /Differences array (decoded in quadratic time), or a
// ToUnicode map too large or whose entry counts are not backed by entries
// (the library trusts the counts and allocates by them).
func (d *pdfDoc) loadFont(fd pdf.Value) *fontInfo {
	f := &fontInfo{dw: 500}
	f.twoByte = fd.Key("Subtype").Name() == "Type0"
	if f.twoByte {
		desc := fd.Key("DescendantFonts").Index(0)
		f.dw = 1000
		if dw := desc.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			f.dw = dw.Float64()
		}
		f.cidW = cidWidths(desc.Key("W"))
	} else {
		f.first = int(fd.Key("FirstChar").Int64())
		ws := fd.Key("Widths")
		for i := 0; i < ws.Len() && i < 256; i++ {
			f.widths = append(f.widths, ws.Index(i).Float64())
		}
	}
	enc := fd.Key("Encoding")
	usable := true
	switch enc.Kind() {
	case pdf.Dict:
		usable = enc.Key("Differences").Len() <= 1024
	case pdf.Name, pdf.Null:
		if enc.Kind() == pdf.Null || enc.Name() == "Identity-H" {
			tu := fd.Key("ToUnicode")
			switch {
			case tu.Kind() == pdf.Stream:
				usable = d.cmapOK(tu)
			case f.twoByte:
				usable = false // glyph ids, no map to text
			}
		}
	}
	if usable {
		func() {
			defer func() {
				if recover() != nil {
					f.enc = nil
				}
			}()
			font := &pdf.Font{V: fd}
			f.enc = font.Encoder()
		}()
	}
	return f
}

// cmapOperators are the CMap operators whose counts cmapOK checks.
var cmapOperators = map[string]bool{
	"begincodespacerange": true, "endcodespacerange": true,
	"beginbfchar": true, "endbfchar": true, "beginbfrange": true, "endbfrange": true,
	"begincidchar": true, "endcidchar": true, "begincidrange": true, "endcidrange": true,
	"beginnotdefchar": true, "endnotdefchar": true, "beginnotdefrange": true, "endnotdefrange": true,
}

// cidWidths reads a CID font's /W array: "c [w1 w2 ...]" and
// "cfirst clast w" entries, up to a bound.
func cidWidths(w pdf.Value) map[int]float64 {
	const maxEntries = 1 << 16
	m := map[int]float64{}
	n := w.Len()
	for i := 0; i < n && len(m) < maxEntries; {
		c := int(w.Index(i).Int64())
		next := w.Index(i + 1)
		if next.Kind() == pdf.Array {
			for j := 0; j < next.Len() && len(m) < maxEntries; j++ {
				m[c+j] = next.Index(j).Float64()
			}
			i += 2
			continue
		}
		last := int(next.Int64())
		wd := w.Index(i + 2).Float64()
		for c2 := c; c2 <= last && c2-c < maxEntries && len(m) < maxEntries; c2++ {
			m[c2] = wd
		}
		i += 3
	}
	return m
}

// cmapOK reports whether the ToUnicode map tu is safe to hand to the
// library: at most maxCMapBytes decoded, and every begin…/end… block's
// count matched by as many entries.
func (d *pdfDoc) cmapOK(tu pdf.Value) bool {
	rd, err := d.openStream(tu)
	if err != nil {
		return false
	}
	lx := newLexer(io.LimitReader(rd, maxCMapBytes+1))
	var last token        // the operand before a begin… operator
	block, count := "", 0 // the open block and its operands so far
	want := 0
	depth := 0 // array nesting: an array is one operand
	for {
		t := lx.next()
		if lx.pos > maxCMapBytes || lx.err != nil {
			return false
		}
		switch t.kind {
		case tEOF:
			return block == ""
		case tArrOpen:
			if depth++; depth == 1 && block != "" {
				count++
			}
			continue
		case tArrClose:
			if depth > 0 {
				depth--
			}
			continue
		}
		if depth > 0 {
			continue
		}
		if t.kind == tName && cmapOperators[t.s] {
			return false // redefining an operator would hide calls from this check
		}
		if t.kind != tKeyword {
			if block != "" {
				count++
			}
			last = t
			continue
		}
		switch t.s {
		case "begincodespacerange", "beginbfchar", "beginbfrange", "begincidchar", "begincidrange", "beginnotdefchar", "beginnotdefrange":
			if block != "" || last.kind != tInt || last.i < 0 || last.i > 1<<16 {
				return false
			}
			per := 2
			if t.s == "beginbfrange" || t.s == "begincidrange" || t.s == "beginnotdefrange" {
				per = 3
			}
			block, count, want = t.s[len("begin"):], 0, int(last.i)*per
		case "endcodespacerange", "endbfchar", "endbfrange", "endcidchar", "endcidrange", "endnotdefchar", "endnotdefrange":
			if block != t.s[len("end"):] || count != want {
				return false
			}
			block = ""
		}
		last = token{}
	}
}
