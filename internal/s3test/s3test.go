// Package s3test runs a real S3 server for tests: versitygw
// (github.com/versity/versitygw, its posix backend over a temporary
// directory) as a child process listening on 127.0.0.1. Tests that need
// it skip, saying so, when the binary is neither on PATH nor in
// $GOPATH/bin; .ci/run installs it:
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"go/build"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tenantkit/tenantkit/attachments/s3blobs"
)

// Server is a running S3 server.
type Server struct {
	// Endpoint is its host:port (plain HTTP).
	Endpoint string
	// AccessKey and SecretKey are its root credentials.
	AccessKey, SecretKey string
	// Region is the region it answers for.
	Region string
}

// binary finds versitygw on PATH or in $GOPATH/bin ("" when absent).
func binary() string {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "versitygw")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// Start starts a server for t, stopped when t ends, or skips t when
// versitygw is not installed.
func Start(t testing.TB) Server {
	t.Helper()
	bin := binary()
	if bin == "" {
		t.Skip("versitygw is not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0): skipping the S3 tests")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := Server{Endpoint: addr, AccessKey: "tenantkit-test", SecretKey: "tenantkit-test-secret-" + random(8), Region: "us-east-1"}
	dir := t.TempDir()
	// Without --keep-alive: with it, versitygw now and then answers a
	// request on a reused connection with "400 An error occurred when
	// parsing the HTTP request" (Go's client logs it as an unsolicited
	// response on an idle channel), which failed a random request of the
	// conformance suite about once in eight runs.
	cmd := exec.Command(bin, "--port", addr, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region, "--quiet", "posix", dir)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("versitygw exited at start (port %s)", addr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s within 15 s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// Client returns a minio-go client of the server.
func (s Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region: s.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// NewBucket creates a bucket of a fresh name and returns the name.
func (s Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := "tk-" + random(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	return name
}

// URL is the s3:// location of prefix in bucket on this server, in the
// form s3blobs.ParseURL reads (credentials apart).
func (s Server) URL(bucket, prefix string) string {
	q := url.Values{"endpoint": {"http://" + s.Endpoint}, "region": {s.Region}, "pathStyle": {"true"}}
	return "s3://" + bucket + "/" + prefix + "?" + q.Encode()
}

// Blobs returns s3blobs.Blobs on a fresh bucket of the server, under
// prefix.
func (s Server) Blobs(t testing.TB, prefix string) *s3blobs.Blobs {
	t.Helper()
	cfg, err := s3blobs.ParseURL(s.URL(s.NewBucket(t), prefix))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccessKey, cfg.SecretKey = s.AccessKey, s.SecretKey
	b, err := s3blobs.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Proxy is a TCP proxy in front of a Server that counts the bytes the
// server sends (what a client reads from the store).
type Proxy struct {
	// Endpoint is the proxy's host:port.
	Endpoint string
	read     atomic.Int64
}

// Read returns how many bytes the server has sent through the proxy.
func (p *Proxy) Read() int64 { return p.read.Load() }

// Reset sets the count to zero.
func (p *Proxy) Reset() { p.read.Store(0) }

// Proxy starts a counting proxy to the server, closed when t ends.
func (s Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Endpoint: ln.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", s.Endpoint, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
			go func() { _, _ = io.Copy(countingWriter{c, &p.read}, up); up.Close(); c.Close() }()
		}
	}()
	return p
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// Via returns a copy of s whose Endpoint is p's.
func (s Server) Via(p *Proxy) Server {
	s.Endpoint = p.Endpoint
	return s
}
