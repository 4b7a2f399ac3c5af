package attachmentsapi

import (
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/progress"
)

// Options configures the attachments area in a Kit: the area's own
// options, and where its files live when Attachments.Blobs is nil.
type Options struct {
	// Attachments configures uploads: limits, quota, partitions, text
	// extraction and image resizing (plug-ins that package full sets),
	// and Blobs, where the files live. Its Fields (custom fields) are the
	// entities area's, and its Logger defaults to the Kit's.
	Attachments attachments.Options
	// FilesDir keeps the files under this directory (attachments.FSBlobs)
	// when Attachments.Blobs is nil.
	FilesDir string
	// FilesInDatabase keeps the files in the database
	// (attachments.SQLBlobs) when Attachments.Blobs is nil: with
	// PostgreSQL, every process sharing the database shares the files.
	// It wins over FilesDir. With neither, files are kept in memory: fine
	// for tests, lost on restart.
	FilesInDatabase bool
}

// Area returns the module of the attachments area, for
// tenantkit.Config.Areas: a Kit built with it has an
// *attachments.Service (tenantkit.AreaOf), and an httpapi.Handler over
// that Kit serves the upload, library, partition and delivery routes.
// The area is built on the custom entities area (added with it): files
// are attached to records and checked against their entity's custom
// fields. When the Kit also has the progress area, text extractions are
// reported as progress jobs.
func Area(opts Options) tenantkit.Module { return module{opts} }

type module struct{ opts Options }

func (module) Name() string { return tenantkit.AreaAttachments }

func (module) Needs() []tenantkit.Module {
	return []tenantkit.Module{entitiesapi.Area(entities.Options{})}
}

func (m module) Build(k *tenantkit.Kit) (tenantkit.Area, error) {
	opts := m.opts.Attachments
	if opts.Fields == nil {
		ents, _ := tenantkit.AreaOf[*entities.Service](k)
		opts.Fields = entityFields{ents}
	}
	if prog, ok := tenantkit.AreaOf[*progress.Service](k); ok && opts.Progress == nil {
		opts.Progress = extractionProgress{k.DB, prog}
	}
	if opts.Blobs == nil && m.opts.FilesInDatabase {
		opts.Blobs = attachments.NewSQLBlobs(k.DB)
	}
	if opts.Blobs == nil && m.opts.FilesDir != "" {
		blobs, err := attachments.NewFSBlobs(m.opts.FilesDir)
		if err != nil {
			return nil, err
		}
		opts.Blobs = blobs
	}
	if opts.Logger == nil {
		opts.Logger = k.Logger
	}
	return attachments.New(k.DB, opts)
}

// Routes are the area's routes, for the Handler of a Kit built with the
// module.
func (module) Routes(env *apikit.Env) []apikit.Route {
	svc, _ := tenantkit.AreaOf[*attachments.Service](env.Kit)
	return apikit.InArea("Attachments", routes(svc, env))
}
