package s3blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tenantkit/tenantkit/attachments"
)

// Config says where Blobs keeps blobs: a bucket (and a key prefix in
// it) of Amazon S3 or any S3-compatible object store.
type Config struct {
	// Bucket holds the blobs; it must exist.
	Bucket string
	// Prefix starts every object's key ("files/" keeps the key
	// "t/id/original" as "files/t/id/original"). A missing final '/' is
	// added.
	Prefix string
	// Endpoint is the store's host[:port]; empty is AWS S3 of Region.
	Endpoint string
	// Insecure talks plain HTTP to Endpoint (a store on a private
	// network or loopback).
	Insecure bool
	// Region is the bucket's region ("us-east-1" when empty).
	Region string
	// PathStyle addresses the bucket in the path (http://host/bucket/key)
	// rather than the host name; most self-hosted stores need it.
	PathStyle bool
	// AccessKey and SecretKey sign requests. Both empty: the environment's
	// AWS credentials, then the instance's IAM role.
	AccessKey, SecretKey string
	// PartSize is the part size of multipart uploads (DefaultPartSize
	// when 0; S3 requires at least 5 MiB). An upload buffers one part.
	PartSize uint64
	// Transport carries the requests (http.DefaultTransport's settings
	// when nil).
	Transport http.RoundTripper
}

// DefaultPartSize is the part size of Blobs' multipart uploads.
const DefaultPartSize = 16 << 20

// smallPut is how much of an upload of unknown size Blobs reads
// before choosing: a stream that ends within it is one PUT, a longer one
// a multipart upload.
const smallPut = 1 << 20

// ParseURL reads a store's location from a URL
//
//	s3://BUCKET[/PREFIX][?endpoint=http://HOST:PORT&region=REGION&pathStyle=true]
//
// endpoint (http:// for plain HTTP, https:// otherwise) and pathStyle are
// for S3-compatible stores; without them it is AWS S3. Credentials are
// not part of it.
func ParseURL(raw string) (Config, error) {
	var c Config
	u, err := url.Parse(raw)
	if err != nil {
		return c, err
	}
	if u.Scheme != "s3" {
		return c, fmt.Errorf("want s3://BUCKET/PREFIX, not scheme %q", u.Scheme)
	}
	if u.User != nil {
		return c, errors.New("credentials do not belong in the URL (use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	if u.Host == "" {
		return c, errors.New("the bucket is missing (s3://BUCKET/PREFIX)")
	}
	c.Bucket = u.Host
	c.Prefix = strings.TrimPrefix(u.Path, "/")
	q := u.Query()
	for name := range q {
		switch name {
		case "endpoint", "region", "pathStyle":
		default:
			return c, fmt.Errorf("unknown parameter %q (want endpoint, region or pathStyle)", name)
		}
	}
	if e := q.Get("endpoint"); e != "" {
		eu, err := url.Parse(e)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" || strings.Trim(eu.Path, "/") != "" {
			return c, fmt.Errorf("endpoint: want http://HOST:PORT or https://HOST, not %q", e)
		}
		c.Endpoint, c.Insecure = eu.Host, eu.Scheme == "http"
	}
	c.Region = q.Get("region")
	if v := q.Get("pathStyle"); v != "" {
		if c.PathStyle, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("pathStyle: want true or false, not %q", v)
		}
	}
	if c.Prefix != "" && !attachments.ValidBlobKey(strings.TrimSuffix(c.Prefix, "/")) {
		return c, fmt.Errorf("prefix %q: want segments of letters, digits, '.', '_' and '-'", c.Prefix)
	}
	return c, nil
}

// Blobs stores blobs as objects of an S3 bucket (minio-go; see the
// package documentation): every server process configured with the same
// bucket shares the files.
//
// Puts stream: an upload of unknown size reads at most a part
// (PartSize) into memory at a time, as a multipart upload; a failed or
// cancelled one is aborted, so an object appears whole or not at all.
// Reads fetch byte ranges: seeking costs nothing, and a Range request
// reads about the range from the store, not the object. Every read of an
// opened blob is conditional on the ETag it was opened with, so a blob
// replaced while it is read fails rather than mixing versions.
type Blobs struct {
	client   *minio.Client
	core     minio.Core
	bucket   string
	prefix   string
	partSize uint64
}

// New connects to the store and checks that the bucket exists
// (and the credentials reach it).
func New(ctx context.Context, c Config) (*Blobs, error) {
	if c.Bucket == "" {
		return nil, errors.New("attachments: S3: no bucket")
	}
	creds := credentials.NewStaticV4(c.AccessKey, c.SecretKey, "")
	if c.AccessKey == "" && c.SecretKey == "" {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.IAM{}})
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
		if c.Region != "" {
			endpoint = "s3." + c.Region + ".amazonaws.com"
		}
	}
	lookup := minio.BucketLookupAuto
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: !c.Insecure, Region: c.Region,
		BucketLookup: lookup, Transport: c.Transport})
	if err != nil {
		return nil, fmt.Errorf("attachments: S3: %w", err)
	}
	prefix := c.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	b := &Blobs{client: client, core: minio.Core{Client: client}, bucket: c.Bucket, prefix: prefix,
		partSize: c.PartSize}
	if b.partSize == 0 {
		b.partSize = DefaultPartSize
	}
	ok, err := client.BucketExists(ctx, c.Bucket)
	if err != nil {
		return nil, fmt.Errorf("attachments: S3 bucket %q at %s: %w", c.Bucket, endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("attachments: S3 bucket %q does not exist at %s", c.Bucket, endpoint)
	}
	return b, nil
}

func (b *Blobs) object(key string) (string, error) {
	if err := attachments.CheckBlobKey(key); err != nil {
		return "", err
	}
	return b.prefix + key, nil
}

// s3Error makes a missing object fs.ErrNotExist.
func s3Error(key string, err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	if resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("attachments: blob %q: %w", key, fs.ErrNotExist)
	}
	return fmt.Errorf("attachments: blob %q: %w", key, err)
}

// Put implements attachments.Blobs. The size of a seekable r (a file, a Blob, a
// bytes.Reader) is passed on; other streams are read smallPut ahead to
// store small ones in one request.
func (b *Blobs) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	obj, err := b.object(key)
	if err != nil {
		return 0, err
	}
	size := readerSize(r)
	src := &countingReader{ctx: ctx, r: r}
	var body io.Reader = src
	if size < 0 {
		head := make([]byte, smallPut)
		n, err := io.ReadFull(src, head)
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			body, size = bytes.NewReader(head[:n]), int64(n)
		case err != nil:
			return src.n, err
		default:
			body = io.MultiReader(bytes.NewReader(head), src)
		}
	}
	_, err = b.client.PutObject(ctx, b.bucket, obj, body, size, minio.PutObjectOptions{
		PartSize: b.partSize, ContentType: "application/octet-stream"})
	if src.err != nil && !errors.Is(src.err, io.EOF) {
		return src.n, src.err // the reader's failure, not how minio reports it
	}
	if err != nil {
		return src.n, fmt.Errorf("attachments: storing blob %q: %w", key, err)
	}
	return src.n, nil
}

// countingReader counts the bytes read and keeps the first error; it
// stops once ctx ends.
type countingReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		if c.err == nil {
			c.err = err
		}
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Open implements attachments.Blobs.
func (b *Blobs) Open(ctx context.Context, key string) (attachments.Blob, error) {
	obj, err := b.object(key)
	if err != nil {
		return nil, err
	}
	st, err := b.client.StatObject(ctx, b.bucket, obj, minio.StatObjectOptions{})
	if err != nil {
		return nil, s3Error(key, err)
	}
	info := attachments.BlobInfo{Key: key, Size: st.Size, ModTime: st.LastModified}
	etag := st.ETag
	return attachments.NewRangeBlob(ctx, info, func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		var opts minio.GetObjectOptions
		if err := opts.SetRange(off, off+n-1); err != nil {
			return nil, err
		}
		if etag != "" {
			if err := opts.SetMatchETag(etag); err != nil {
				return nil, err
			}
		}
		body, _, _, err := b.core.GetObject(ctx, b.bucket, obj, opts)
		if err != nil {
			if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
				return nil, fmt.Errorf("attachments: blob %q was replaced while it was read", key)
			}
			return nil, s3Error(key, err)
		}
		return body, nil
	}), nil
}

// Stat implements attachments.Blobs.
func (b *Blobs) Stat(ctx context.Context, key string) (attachments.BlobInfo, error) {
	obj, err := b.object(key)
	if err != nil {
		return attachments.BlobInfo{}, err
	}
	st, err := b.client.StatObject(ctx, b.bucket, obj, minio.StatObjectOptions{})
	if err != nil {
		return attachments.BlobInfo{}, s3Error(key, err)
	}
	return attachments.BlobInfo{Key: key, Size: st.Size, ModTime: st.LastModified}, nil
}

// Delete implements attachments.Blobs.
func (b *Blobs) Delete(ctx context.Context, key string) error {
	obj, err := b.object(key)
	if err != nil {
		return err
	}
	if err := b.client.RemoveObject(ctx, b.bucket, obj, minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(s3Error(key, err), fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("attachments: deleting blob %q: %w", key, err)
	}
	return nil
}

// List implements attachments.Blobs. Objects under the prefix whose rest is not a
// key the service makes (put there by something else) are left out.
func (b *Blobs) List(ctx context.Context, prefix string) ([]attachments.BlobInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing's goroutine on an early return
	var out []attachments.BlobInfo
	for o := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("attachments: listing blobs: %w", o.Err)
		}
		key := strings.TrimPrefix(o.Key, b.prefix)
		if !attachments.ValidBlobKey(key) {
			continue
		}
		out = append(out, attachments.BlobInfo{Key: key, Size: o.Size, ModTime: o.LastModified})
	}
	return out, nil
}

// readerSize returns how many bytes r has left to read when it can tell
// without reading (a seeker: files, blobs, bytes.Reader), or -1.
func readerSize(r io.Reader) int64 {
	s, ok := r.(io.Seeker)
	if !ok {
		return -1
	}
	cur, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	end, err := s.Seek(0, io.SeekEnd)
	if err != nil {
		return -1
	}
	if _, err := s.Seek(cur, io.SeekStart); err != nil {
		return -1
	}
	return end - cur
}
