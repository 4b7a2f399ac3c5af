package extract

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// This file holds a small PDF tokenizer and object parser, used to check a
// file's cross-reference sections before the PDF library reads them
// (pdfxref.go) and to interpret content streams (pdftext.go). Its rules
// follow the library's lexer, so that both see the same tokens in a file
// both accept.

// tokKind is the kind of a PDF token.
type tokKind int

const (
	tEOF       tokKind = iota
	tInt               // integer: tok.i (and tok.f)
	tReal              // real: tok.f
	tString            // literal or hex string: tok.s
	tName              // name without the slash: tok.s
	tKeyword           // operator or keyword (true, false, null, R, obj, ...): tok.s
	tArrOpen           // [
	tArrClose          // ]
	tDictOpen          // <<
	tDictClose         // >>
)

type token struct {
	kind tokKind
	i    int64
	f    float64
	s    string
}

// Bounds of the lexer: bytes past them are read but not kept.
const (
	maxStringBytes  = 1 << 20 // a string operand
	maxKeywordBytes = 256     // a name, number or operator
)

// lexer reads tokens from a byte stream.
type lexer struct {
	r   *bufio.Reader
	err error // the first read error other than io.EOF
	eof bool
	pos int64 // bytes consumed
	buf []byte
}

func newLexer(r io.Reader) *lexer {
	return &lexer{r: bufio.NewReaderSize(r, 4<<10)}
}

func (lx *lexer) readByte() (byte, bool) {
	if lx.eof {
		return 0, false
	}
	c, err := lx.r.ReadByte()
	if err != nil {
		lx.eof = true
		if err != io.EOF && lx.err == nil {
			lx.err = err
		}
		return 0, false
	}
	lx.pos++
	return c, true
}

func (lx *lexer) unreadByte() {
	if !lx.eof && lx.r.UnreadByte() == nil {
		lx.pos--
	}
}

func isPDFSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

func isPDFDelim(c byte) bool {
	switch c {
	case '<', '>', '(', ')', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

// next returns the next token; tEOF at the end of the stream or after a
// read error (see lx.err).
func (lx *lexer) next() token {
	var c byte
	for {
		var ok bool
		if c, ok = lx.readByte(); !ok {
			return token{kind: tEOF}
		}
		if isPDFSpace(c) {
			continue
		}
		if c == '%' {
			for c != '\r' && c != '\n' {
				if c, ok = lx.readByte(); !ok {
					return token{kind: tEOF}
				}
			}
			continue
		}
		break
	}
	switch c {
	case '[':
		return token{kind: tArrOpen}
	case ']':
		return token{kind: tArrClose}
	case '{', '}':
		return token{kind: tKeyword, s: string(c)}
	case '(':
		return lx.literalString()
	case '/':
		return token{kind: tName, s: lx.name()}
	case '<':
		if c2, ok := lx.readByte(); ok && c2 == '<' {
			return token{kind: tDictOpen}
		}
		lx.unreadByte()
		return lx.hexString()
	case '>':
		if c2, ok := lx.readByte(); ok && c2 == '>' {
			return token{kind: tDictClose}
		}
		lx.unreadByte()
		return token{kind: tKeyword, s: ">"}
	case ')':
		return token{kind: tKeyword, s: ")"}
	}
	lx.unreadByte()
	return lx.keyword()
}

func (lx *lexer) literalString() token {
	b := lx.buf[:0]
	add := func(c byte) {
		if len(b) < maxStringBytes {
			b = append(b, c)
		}
	}
	depth := 1
	for {
		c, ok := lx.readByte()
		if !ok {
			break
		}
		switch c {
		case '(':
			depth++
			add(c)
			continue
		case ')':
			if depth--; depth == 0 {
				lx.buf = b
				return token{kind: tString, s: string(b)}
			}
			add(c)
			continue
		case '\\':
		default:
			add(c)
			continue
		}
		c, ok = lx.readByte()
		if !ok {
			break
		}
		switch c {
		case 'n':
			add('\n')
		case 'r':
			add('\r')
		case 't':
			add('\t')
		case 'b':
			add('\b')
		case 'f':
			add('\f')
		case '\r':
			if c2, ok := lx.readByte(); ok && c2 != '\n' {
				lx.unreadByte()
			}
		case '\n':
		case '0', '1', '2', '3', '4', '5', '6', '7':
			x := int(c - '0')
			for range 2 {
				c2, ok := lx.readByte()
				if !ok {
					break
				}
				if c2 < '0' || c2 > '7' {
					lx.unreadByte()
					break
				}
				x = x*8 + int(c2-'0')
			}
			add(byte(x))
		default:
			add(c)
		}
	}
	lx.buf = b
	return token{kind: tString, s: string(b)}
}

func unhexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func (lx *lexer) hexString() token {
	b := lx.buf[:0]
	hi := -1
	for {
		c, ok := lx.readByte()
		if !ok || c == '>' {
			break
		}
		d := unhexDigit(c)
		if d < 0 {
			continue
		}
		if hi < 0 {
			hi = d
			continue
		}
		if len(b) < maxStringBytes {
			b = append(b, byte(hi<<4|d))
		}
		hi = -1
	}
	if hi >= 0 && len(b) < maxStringBytes {
		b = append(b, byte(hi<<4))
	}
	lx.buf = b
	return token{kind: tString, s: string(b)}
}

func (lx *lexer) name() string {
	b := lx.buf[:0]
	for {
		c, ok := lx.readByte()
		if !ok {
			break
		}
		if isPDFDelim(c) || isPDFSpace(c) {
			lx.unreadByte()
			break
		}
		if c == '#' {
			h, _ := lx.readByte()
			l, _ := lx.readByte()
			if x := unhexDigit(h)<<4 | unhexDigit(l); x >= 0 {
				c = byte(x)
			}
		}
		if len(b) < maxKeywordBytes {
			b = append(b, c)
		}
	}
	lx.buf = b
	return string(b)
}

func (lx *lexer) keyword() token {
	b := lx.buf[:0]
	for {
		c, ok := lx.readByte()
		if !ok {
			break
		}
		if isPDFDelim(c) || isPDFSpace(c) {
			lx.unreadByte()
			break
		}
		if len(b) < maxKeywordBytes {
			b = append(b, c)
		}
	}
	lx.buf = b
	s := string(b)
	if isPDFInteger(s) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return token{kind: tInt, i: i, f: float64(i)}
		}
		f, _ := strconv.ParseFloat(s, 64)
		return token{kind: tReal, f: f}
	}
	if isPDFReal(s) {
		f, _ := strconv.ParseFloat(s, 64)
		return token{kind: tReal, f: f}
	}
	return token{kind: tKeyword, s: s}
}

func isPDFInteger(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isPDFReal(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	dots := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '.':
			dots++
		case s[i] < '0' || s[i] > '9':
			return false
		}
	}
	return dots == 1
}

// PDF objects as the parser returns them: nil, bool, int64, float64,
// pdfString, pdfName, []any, map[string]any, pdfRef.
type (
	pdfName   string
	pdfString string
	pdfRef    struct{ id, gen int64 }
)

// errSyntax is the parser's error for what it cannot read.
var errSyntax = errors.New("pdf syntax error")

// maxParseDepth bounds the nesting of arrays and dictionaries the parser
// reads (the cross-reference dictionaries it reads are flat).
const maxParseDepth = 64

// parser reads objects from a lexer, with the two tokens of look-ahead an
// indirect reference ("1 0 R") needs.
type parser struct {
	lx    *lexer
	ahead []token
}

func (p *parser) next() token {
	if n := len(p.ahead); n > 0 {
		t := p.ahead[n-1]
		p.ahead = p.ahead[:n-1]
		return t
	}
	return p.lx.next()
}

func (p *parser) unread(t token) { p.ahead = append(p.ahead, t) }

// object reads one object (an indirect reference included).
func (p *parser) object(depth int) (any, error) {
	if depth > maxParseDepth {
		return nil, errSyntax
	}
	t := p.next()
	switch t.kind {
	case tEOF, tArrClose, tDictClose:
		return nil, errSyntax
	case tReal:
		return t.f, nil
	case tString:
		return pdfString(t.s), nil
	case tName:
		return pdfName(t.s), nil
	case tKeyword:
		switch t.s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		}
		return nil, errSyntax
	case tArrOpen:
		var a []any
		for {
			t := p.next()
			if t.kind == tArrClose {
				return a, nil
			}
			p.unread(t)
			v, err := p.object(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case tDictOpen:
		d := map[string]any{}
		for {
			t := p.next()
			if t.kind == tDictClose {
				return d, nil
			}
			if t.kind != tName {
				return nil, errSyntax
			}
			v, err := p.object(depth + 1)
			if err != nil {
				return nil, err
			}
			d[t.s] = v
		}
	}
	// An integer, or the start of a reference.
	t2 := p.next()
	if t2.kind == tInt {
		t3 := p.next()
		if t3.kind == tKeyword && t3.s == "R" {
			return pdfRef{t.i, t2.i}, nil
		}
		p.unread(t3)
	}
	p.unread(t2)
	return t.i, nil
}
