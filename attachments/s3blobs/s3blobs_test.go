package s3blobs_test

import (
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/blobstest"
	"github.com/tenantkit/tenantkit/attachments/s3blobs"
	"github.com/tenantkit/tenantkit/internal/s3test"
)

// Blobs passes the conformance suite against a local S3 server
// (versitygw; skipped, saying so, when it is not installed).
func TestConformance(t *testing.T) {
	b := s3test.Start(t).Blobs(t, "files")
	blobstest.Run(t, func(*testing.T) attachments.Blobs { return b }, blobstest.Options{})
}

// ParseURL reads the bucket, prefix and the S3-compatible store's
// settings, and refuses credentials in the URL, unknown parameters and
// bad values, naming them.
func TestParseURL(t *testing.T) {
	t.Parallel()
	c, err := s3blobs.ParseURL("s3://files/tenant/kit?endpoint=http://127.0.0.1:9000&region=eu-west-1&pathStyle=true")
	if err != nil {
		t.Fatal(err)
	}
	want := s3blobs.Config{Bucket: "files", Prefix: "tenant/kit", Endpoint: "127.0.0.1:9000", Insecure: true,
		Region: "eu-west-1", PathStyle: true}
	if c != want {
		t.Errorf("ParseURL = %+v, want %+v", c, want)
	}
	if c, err := s3blobs.ParseURL("s3://files"); err != nil || c.Bucket != "files" || c.Endpoint != "" || c.Insecure {
		t.Errorf("ParseURL(s3://files) = %+v, %v: want AWS S3", c, err)
	}
	for raw, says := range map[string]string{
		"http://files/x":                      "scheme",
		"s3://key:secret@files/x":             "credentials",
		"s3:///x":                             "bucket",
		"s3://files/x?acl=public":             "unknown parameter",
		"s3://files/x?endpoint=ftp://h":       "endpoint",
		"s3://files/x?pathStyle=maybe":        "pathStyle",
		"s3://files/../x":                     "prefix",
		"s3://files/x?endpoint=http://h/path": "endpoint",
	} {
		if _, err := s3blobs.ParseURL(raw); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseURL(%q) = %v, want an error naming %s", raw, err, says)
		}
	}
}
