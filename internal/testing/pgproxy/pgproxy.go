// Package pgproxy is a TCP proxy to PostgreSQL for tests that need the
// connection to fail: cut (every connection dropped, new ones refused,
// until restored), or at one exact moment, after the server was sent a
// COMMIT (or a statement outside a transaction) and before its answer
// reaches the client. That is the one failure after which a client
// cannot know whether its write committed.
package pgproxy

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards connections to one PostgreSQL server, in plain text (the
// URL it gives asks for sslmode=disable, so that it can read the
// statements).
type Proxy struct {
	ln     net.Listener
	target string
	url    string
	armed  atomic.Pointer[[]byte] // the marker of the statement whose answer is lost
	wg     sync.WaitGroup
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

// New starts a proxy to the server of the PostgreSQL URL dbURL, closed
// when the test ends.
func New(t testing.TB, dbURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	p := &Proxy{ln: ln, target: target, url: u.String(), conns: map[net.Conn]bool{}}
	t.Cleanup(p.close)
	p.wg.Add(1)
	go p.serve()
	return p
}

// URL is dbURL with the proxy's address in place of the server's.
func (p *Proxy) URL() string { return p.url }

// LoseNextCommitAnswer arms the proxy: the next COMMIT a client sends
// (a simple-protocol "commit") reaches the server; once the server has
// answered it, the client's connection is closed without the answer.
func (p *Proxy) LoseNextCommitAnswer() { p.LoseNextAnswer("commit\x00") }

// LoseNextAnswer arms the proxy as LoseNextCommitAnswer does for the
// next message a client sends whose bytes hold marker: a statement's text
// (sent once, before pgx caches the statement) or a text parameter's
// value (sent with every execution).
func (p *Proxy) LoseNextAnswer(marker string) {
	m := []byte(marker)
	p.armed.Store(&m)
}

// SetCut drops every open connection and refuses new ones (true), or
// lets connections through again (false).
func (p *Proxy) SetCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// Armed reports whether the armed message has not come yet.
func (p *Proxy) Armed() bool { return p.armed.Load() != nil }

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		lost := make(chan struct{})
		go p.toServer(c, up, lost)
		go p.toClient(up, c, lost)
	}
}

// toServer forwards the client's bytes; it closes lost as it sends the
// armed message.
func (p *Proxy) toServer(c, up net.Conn, lost chan struct{}) {
	defer up.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if m := p.armed.Load(); m != nil && bytes.Contains(buf[:n], *m) && p.armed.CompareAndSwap(m, nil) {
				close(lost) // before the server can answer
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				c.Close()
				return
			}
		}
		if err != nil {
			c.Close()
			return
		}
	}
}

// toClient forwards the server's bytes; after the armed message it drops
// the server's answer and closes both connections, so that the client
// learns nothing of a commit that has happened.
func (p *Proxy) toClient(up, c net.Conn, lost chan struct{}) {
	defer func() {
		c.Close()
		up.Close()
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, up)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		select {
		case <-lost:
			return
		default:
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
