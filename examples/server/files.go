package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/s3blobs"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/store"
)

// filesLocation is where attachments' files are kept, read from
// FILES_URL (or -copy-files-to's value):
//
//	file://DIR   a directory of this machine (the default, DATA_DIR/files)
//	postgres     the database of DATABASE_URL, which must be PostgreSQL
//	s3://BUCKET/PREFIX?endpoint=…&region=…&pathStyle=true
//	             an S3-compatible bucket, credentials from
//	             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
type filesLocation struct {
	dir        string // file://
	inDatabase bool   // postgres
	s3         *s3blobs.Config
	raw        string
}

// parseFilesLocation reads v (setting names the variable or flag for
// errors). An empty v is DATA_DIR/files.
func parseFilesLocation(setting, v, dataDir, databaseURL string, getenv func(string) string) (filesLocation, error) {
	switch {
	case v == "":
		return filesLocation{dir: filepath.Join(dataDir, "files"), raw: "file://" + filepath.Join(dataDir, "files")}, nil
	case strings.HasPrefix(v, "file://"):
		dir := strings.TrimPrefix(v, "file://")
		if dir == "" {
			return filesLocation{}, fmt.Errorf("%s: file:// needs a directory (file:///var/lib/tenantkit/files)", setting)
		}
		return filesLocation{dir: dir, raw: v}, nil
	case v == filesInDatabaseValue:
		if !isPostgres(databaseURL) {
			return filesLocation{}, fmt.Errorf("%s=postgres keeps files in the PostgreSQL database of DATABASE_URL, but DATABASE_URL is not postgres://… (SQLite serves one machine: keep files in file:// or s3://)", setting)
		}
		return filesLocation{inDatabase: true, raw: v}, nil
	case strings.HasPrefix(v, "s3://"):
		cfg, err := s3blobs.ParseURL(v)
		if err != nil {
			return filesLocation{}, fmt.Errorf("%s: %w", setting, err)
		}
		cfg.AccessKey, cfg.SecretKey = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
		if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
			return filesLocation{}, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together")
		}
		return filesLocation{s3: &cfg, raw: v}, nil
	}
	return filesLocation{}, fmt.Errorf("%s: want file://DIR, postgres or s3://BUCKET/PREFIX, not %q", setting, v)
}

// isPostgres reports whether a DATABASE_URL selects PostgreSQL.
// filesInDatabaseValue is the FILES_URL that keeps files in the database
// of DATABASE_URL.
const filesInDatabaseValue = "postgres"

func isPostgres(databaseURL string) bool {
	return strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://")
}

// shared reports whether every server process configured alike sees the
// same files.
func (l filesLocation) shared() bool { return l.dir == "" }

// String names the location for logs (an s3:// URL holds no secret).
func (l filesLocation) String() string { return l.raw }

// configure sets cfg to keep files at l; S3 is connected to (and its
// bucket checked) here.
func (l filesLocation) configure(ctx context.Context, cfg *full.Config) error {
	switch {
	case l.inDatabase:
		cfg.FilesInDatabase = true
	case l.s3 != nil:
		b, err := s3blobs.New(ctx, *l.s3)
		if err != nil {
			return fmt.Errorf("FILES_URL: %w", err)
		}
		cfg.Attachments.Blobs = b
	default:
		cfg.FilesDir = l.dir
	}
	return nil
}

// open returns the storage at l, for -copy-files-to (db is the Kit's).
func (l filesLocation) open(ctx context.Context, db *store.DB) (attachments.Blobs, error) {
	switch {
	case l.inDatabase:
		return attachments.NewSQLBlobs(db), nil
	case l.s3 != nil:
		return s3blobs.New(ctx, *l.s3)
	default:
		return attachments.NewFSBlobs(l.dir)
	}
}

// warnUnshared logs that files of this machine do not serve several
// processes, when the database could be shared.
func warnUnshared(logger *slog.Logger, files filesLocation, databaseURL string) {
	if files.shared() || !isPostgres(databaseURL) {
		return
	}
	logger.Warn("attachments' files are kept on this machine only ("+files.String()+"): several server processes sharing this PostgreSQL database need FILES_URL=postgres or FILES_URL=s3://…, or a file uploaded to one is missing on the others",
		"filesUrl", files.String())
}

// claimFiles records, for the server's life, where this server keeps
// attachments' files (store.DB.Claim), so that servers on one database
// agree on it: a server whose files are elsewhere than another's fails its
// start, naming FILES_URL. Servers sharing a store (FILES_URL=postgres, or
// one s3:// bucket and prefix) agree, and so do processes on one machine
// sharing its directory (a restart that starts the new process before the
// old one stops); two machines' directories do not, for a file uploaded
// through one would be missing on the other. On SQLite, one process's
// database, nothing conflicts.
//
// A server killed a moment ago keeps its claim until the database notices
// its connection closed, so a conflict is looked for again for up to
// filesClaimWait.
func claimFiles(ctx context.Context, db *store.DB, files filesLocation) (release func(), err error) {
	where := files.raw
	if !files.shared() {
		host, _ := os.Hostname()
		dir, err := filepath.Abs(files.dir)
		if err != nil {
			return nil, err
		}
		where = "file://" + host + dir
	}
	deadline := time.Now().Add(filesClaimWait)
	for {
		release, conflict, err := db.Claim(ctx, "tenantkit.files:"+db.Schema(), where)
		if err != nil {
			return nil, err
		}
		if !conflict {
			return release, nil
		}
		release()
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, badSetting(fmt.Errorf("FILES_URL: another server runs on this database with its files elsewhere than this one's (%s): "+
		"every server of a database needs the same shared FILES_URL (postgres, or one s3:// bucket), or a file uploaded through one is missing on the others", files))
}

// filesClaimWait is how long claimFiles looks again before it fails the
// start.
const filesClaimWait = 3 * time.Second

// copyFiles copies every file of the configured store (from) to the
// store at to (-copy-files-to), printing the counts to stdout.
func copyFiles(ctx context.Context, kit *full.Kit, from, to filesLocation, logger *slog.Logger, stdout io.Writer) error {
	if from.raw == to.raw {
		return fmt.Errorf("-copy-files-to: %s is the configured FILES_URL already", to)
	}
	dst, err := to.open(ctx, kit.DB)
	if err != nil {
		return fmt.Errorf("-copy-files-to: %w", err)
	}
	logger.Info("copying files", "from", from.String(), "to", to.String())
	res, err := attachments.CopyBlobs(ctx, dst, kit.Attachments.Blobs(), func(r attachments.CopyResult) {
		if n := r.Copied + r.Skipped; n%100 == 0 {
			logger.Info("copying files", "copied", r.Copied, "skipped", r.Skipped, "bytes", r.Bytes)
		}
	})
	fmt.Fprintf(stdout, "copied %d files (%d bytes) from %s to %s; %d already there with the same size\n",
		res.Copied, res.Bytes, from, to, res.Skipped)
	if err != nil {
		return fmt.Errorf("-copy-files-to: %w (run it again to resume)", err)
	}
	return nil
}
