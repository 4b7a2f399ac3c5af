package attachments

import (
	"fmt"
	"strconv"
)

// OptionsFromEnv reads the attachment variables through getenv (os.Getenv in
// a server):
//
//	APP_ATTACHMENT_MAX_UPLOAD_MB        largest file, in MB (default 25)
//	APP_ATTACHMENT_TENANT_QUOTA_MB      a tenant's total, in MB (default 512)
//	APP_DEFAULT_ATTACHMENT_OCR_ENABLED  new partitions extract text (default true)
//	APP_ATTACHMENT_PARTITIONS_LOCKED    true refuses partition changes (403)
//	APP_ATTACHMENT_IMAGE_MEMORY_MB      memory of a process's image resizes, in MB (default 128)
//
// A bad value is an error naming the variable. Blobs, Fields and the rest
// are left for the caller.
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	var opts Options
	for _, v := range []struct {
		name string
		dst  *int64
	}{{"APP_ATTACHMENT_MAX_UPLOAD_MB", &opts.MaxUploadBytes}, {"APP_ATTACHMENT_TENANT_QUOTA_MB", &opts.TenantQuotaBytes},
		{"APP_ATTACHMENT_IMAGE_MEMORY_MB", &opts.ImageMemoryBytes}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		mb, err := strconv.ParseInt(s, 10, 64)
		if err != nil || mb < 1 || mb > 1<<20 {
			return opts, fmt.Errorf("%s: want a whole number of megabytes from 1 to 1048576, got %q", v.name, s)
		}
		*v.dst = mb << 20
	}
	for _, v := range []struct {
		name   string
		dst    *bool
		invert bool
	}{{"APP_DEFAULT_ATTACHMENT_OCR_ENABLED", &opts.NoDefaultOCR, true}, {"APP_ATTACHMENT_PARTITIONS_LOCKED", &opts.PartitionsLocked, false}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return opts, fmt.Errorf("%s: want true or false, got %q", v.name, s)
		}
		*v.dst = b != v.invert
	}
	return opts, nil
}
