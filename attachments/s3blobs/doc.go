// Package s3blobs keeps attachments' files in a bucket of Amazon S3 or any
// S3-compatible object store: Blobs implements attachments.Blobs, and every
// server process configured with the same bucket shares the files.
//
//	cfg, err := s3blobs.ParseURL("s3://files/tenantkit?endpoint=http://127.0.0.1:9000&pathStyle=true")
//	cfg.AccessKey, cfg.SecretKey = key, secret // or the environment's AWS credentials
//	blobs, err := s3blobs.New(ctx, cfg)
//	kit, err := full.Open(ctx, full.Config{…, Attachments: attachments.Options{Blobs: blobs}})
//
// It passes the conformance suite of package attachments/blobstest.
//
// # Decisions
//
// A package of its own, not a type of package attachments: the S3 client
// and its dependencies are linked only into programs that import it (the
// standalone server does, for FILES_URL=s3://…).
//
// The client is github.com/minio/minio-go/v7: its dependency tree is a
// handful of small modules where aws-sdk-go-v2 brings a dozen service and
// config modules, and it has what the Blobs need: a streaming PutObject
// that switches to multipart uploads by itself, GetObject with byte ranges
// and conditions, ListObjects.
//
// Uploads stream in 16 MiB parts (Config.PartSize; one part in memory; the
// size is passed on when the reader can tell it, and a stream ending
// within 1 MiB is one PUT); a failed upload is aborted, so an object
// appears whole or not at all. An abort that cannot reach the store (the
// process dies) leaves the parts of an incomplete multipart upload, which
// S3 keeps and bills until a bucket lifecycle rule
// (AbortIncompleteMultipartUpload) removes them: set one.
//
// Reads are lazy (attachments.NewRangeBlob): Open reads the size, Seek
// costs nothing, and Read fetches a window from where the reader is, so a
// Range request reads about the range from the store, not the object.
// Every fetch of an opened blob is conditional on the ETag it was opened
// with, so a blob replaced while it is read fails rather than mixing
// versions.
//
// Keys are the service's (attachments.ValidBlobKey) under Config.Prefix;
// List leaves out objects under the prefix whose rest is not such a key
// (put there by something else).
package s3blobs
