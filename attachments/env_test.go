package attachments_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
)

// OptionsFromEnv reads the resize budget in megabytes, and refuses a bad
// value naming the variable.
func TestOptionsFromEnvImageMemory(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	opts, err := attachments.OptionsFromEnv(env(map[string]string{"APP_ATTACHMENT_IMAGE_MEMORY_MB": "64"}))
	is.NoErr(err)
	is.Equal(opts.ImageMemoryBytes, int64(64<<20))
	opts, err = attachments.OptionsFromEnv(env(nil))
	is.NoErr(err)
	is.Equal(opts.ImageMemoryBytes, int64(0)) // New applies DefaultImageMemoryBytes
	for _, bad := range []string{"0", "-5", "lots", "1.5"} {
		_, err := attachments.OptionsFromEnv(env(map[string]string{"APP_ATTACHMENT_IMAGE_MEMORY_MB": bad}))
		if err == nil || !strings.Contains(err.Error(), "APP_ATTACHMENT_IMAGE_MEMORY_MB") {
			t.Errorf("APP_ATTACHMENT_IMAGE_MEMORY_MB=%q: %v, want an error naming it", bad, err)
		}
	}
}
