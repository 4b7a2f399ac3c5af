package webhooks

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/tenantkit/tenantkit/internal/netguard"
	"github.com/tenantkit/tenantkit/internal/secretbox"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/jobs/drain"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables.
var Migrations = store.Migrations{Line: "webhooks", FS: migrationsFS, Dir: "migrations"}

// Options configure the service.
type Options struct {
	// SecretKey seals the signing secrets at rest (at least 32 bytes; the
	// Kit's key).
	SecretKey []byte
	// AllowPrivateURLs lets webhooks target loopback, private and
	// link-local addresses (refused by default).
	AllowPrivateURLs bool
	// RotationPeriod is how long the previous secret keeps signing after a
	// rotation; zero means 24 hours.
	RotationPeriod time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Disabled starts the service with webhooks switched off (SetEnabled):
	// no deliveries, retries, test sends or inbound receives.
	Disabled bool
	// TenantEnabled, when set, says whether a tenant's outbound webhooks
	// are on: while it answers false, that tenant's deliveries expire
	// unsent and its test sends and retries fail with ErrDisabled (the Kit
	// asks the custom-webhooks integration's state). An error counts as
	// on: a failing lookup never silently drops deliveries. Inbound
	// receivers are server-wide and follow SetEnabled only.
	TenantEnabled func(ctx context.Context, tenantID string) (bool, error)
	// RetryDelay is the wait after a failed attempt (1-based); nil means
	// the default schedule (about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 14
	// to 24 h, with jitter). Tests shorten it.
	RetryDelay func(attempt int) time.Duration
	// Store is where the service keeps its webhooks, deliveries, inbound
	// messages and delivery queues; nil means NewSQLStore() over the
	// database given to New (whose migrations then include Migrations).
	// A host's own Store must pass webhookstest.Run.
	Store Store
}

// Service manages outbound webhooks. Every method reads the tenant (and
// organization) from the context's store.Scope.
type Service struct {
	db     *store.DB
	store  Store
	box    *secretbox.Box
	opts   Options
	jobs   *jobs.Engine // set by RegisterJobs; deliveries need it
	client *http.Client
	limits *limiters
	batch  *store.Batcher // attempts' writes, group-committed
	// observe, when set (Observe), is told every attempt's outcome.
	observe func(outcome string, lag time.Duration)

	inboundMu sync.RWMutex
	endpoints map[string]Endpoint

	disabled atomic.Bool
	queues   *drain.Queues // the webhooks' delivery queues

	// The queues' Run, from Start to Stop.
	runMu     sync.Mutex
	runCancel context.CancelFunc
	runDone   chan struct{}
}

// ErrDisabled is returned by test sends, retries and inbound receives
// while webhooks are switched off; it is a store.ErrConflict (409).
var ErrDisabled = store.Errorf(store.ErrConflict, "Custom Webhooks integration is disabled")

// SetEnabled switches webhooks on or off for the whole process: while off,
// deliveries expire unsent, and test sends, retries and inbound receives
// fail with ErrDisabled. (Per tenant, Options.TenantEnabled does the same
// for outbound webhooks.)
func (s *Service) SetEnabled(on bool) { s.disabled.Store(!on) }

// Enabled reports whether webhooks are switched on.
func (s *Service) Enabled() bool { return !s.disabled.Load() }

// tenantEnabled reports whether the tenant's outbound webhooks are on
// (Options.TenantEnabled; on when unset or when it fails).
func (s *Service) tenantEnabled(ctx context.Context, tenantID string) bool {
	if s.opts.TenantEnabled == nil {
		return true
	}
	on, err := s.opts.TenantEnabled(ctx, tenantID)
	return on || err != nil
}

// New returns the service over db, whose migrations include Migrations
// unless opts.Store keeps the data elsewhere. db runs the transactions
// the service opens, and the store's statements in them.
func New(db *store.DB, opts Options) (*Service, error) {
	box, err := secretbox.New(opts.SecretKey, "webhooks.secret")
	if err != nil {
		return nil, err
	}
	if opts.RotationPeriod == 0 {
		opts.RotationPeriod = DefaultRotationPeriod
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RetryDelay == nil {
		opts.RetryDelay = retryDelay
	}
	if opts.Store == nil {
		opts.Store = NewSQLStore()
	}
	client := netguard.Client(netguard.Options{Timeout: time.Duration(maxTimeoutMs) * time.Millisecond, AllowPrivate: opts.AllowPrivateURLs})
	svc := &Service{db: db, store: opts.Store, box: box, opts: opts, client: client, limits: &limiters{m: map[string]*rate.Limiter{}},
		batch: store.NewBatcher(db), endpoints: map[string]Endpoint{}}
	svc.disabled.Store(opts.Disabled)
	svc.queues = svc.newQueues()
	return svc, nil
}

// Input is a webhook as created: name, url and subscribedEvents are
// required; httpMethod defaults to POST, the settings to their defaults,
// isActive to true.
type Input struct {
	Name        string `json:"name" jsonschema:"required,minLength=1,maxLength=255"`
	Description string `json:"description" jsonschema:"maxLength=1000"`
	// URL is an http(s) URL on a public address (see Webhook.URL).
	URL string `json:"url" jsonschema:"required,minLength=1,maxLength=2048"`
	// SubscribedEvents are event types or patterns ("orders.*", "*").
	SubscribedEvents []string `json:"subscribedEvents" jsonschema:"required,minItems=1,maxItems=100,maxLength=200,pattern=^(\\*|[a-z0-9_]+(\\.[a-z0-9_]+)*(\\.\\*)?)$"`
	// HTTPMethod is POST (default), PUT or PATCH.
	HTTPMethod    string            `json:"httpMethod" jsonschema:"pattern=^([pP][oO][sSſ][tT]|[pP][uU][tT]|[pP][aA][tT][cC][hH])?$"`
	CustomHeaders map[string]string `json:"customHeaders"` // sent with every delivery
	// MaxRetries is the attempts a delivery gets in all (default
	// DefaultMaxRetries).
	MaxRetries *int `json:"maxRetries" jsonschema:"minimum=0,maximum=30"`
	// TimeoutMs bounds one attempt (default DefaultTimeoutMs).
	TimeoutMs *int `json:"timeoutMs" jsonschema:"minimum=1000,maximum=60000"`
	// RateLimitPerMinute caps deliveries a minute; 0 (default) is no cap.
	RateLimitPerMinute *int `json:"rateLimitPerMinute" jsonschema:"minimum=0,maximum=10000"`
	// AutoDisableThreshold is the failures in a row that switch the webhook
	// off (default DefaultAutoDisableThreshold).
	AutoDisableThreshold *int  `json:"autoDisableThreshold" jsonschema:"minimum=0,maximum=1000"`
	IsActive             *bool `json:"isActive"` // default true
}

// Patch changes a webhook; nil fields keep their value.
type Patch struct {
	Name        *string `json:"name" jsonschema:"minLength=1,maxLength=255"`
	Description *string `json:"description" jsonschema:"maxLength=1000"`
	// URL is an http(s) URL on a public address (see Webhook.URL).
	URL *string `json:"url" jsonschema:"minLength=1,maxLength=2048"`
	// SubscribedEvents are event types or patterns ("orders.*", "*").
	SubscribedEvents *[]string `json:"subscribedEvents" jsonschema:"minItems=1,maxItems=100,maxLength=200,pattern=^(\\*|[a-z0-9_]+(\\.[a-z0-9_]+)*(\\.\\*)?)$"`
	// HTTPMethod is POST, PUT or PATCH.
	HTTPMethod    *string            `json:"httpMethod" jsonschema:"pattern=^([pP][oO][sSſ][tT]|[pP][uU][tT]|[pP][aA][tT][cC][hH])$"`
	CustomHeaders *map[string]string `json:"customHeaders"` // replaces all the headers
	// MaxRetries is the attempts a delivery gets in all.
	MaxRetries *int `json:"maxRetries" jsonschema:"minimum=0,maximum=30"`
	// TimeoutMs bounds one attempt.
	TimeoutMs *int `json:"timeoutMs" jsonschema:"minimum=1000,maximum=60000"`
	// RateLimitPerMinute caps deliveries a minute; 0 is no cap.
	RateLimitPerMinute *int `json:"rateLimitPerMinute" jsonschema:"minimum=0,maximum=10000"`
	// AutoDisableThreshold is the failures in a row that switch the webhook
	// off.
	AutoDisableThreshold *int  `json:"autoDisableThreshold" jsonschema:"minimum=0,maximum=1000"`
	IsActive             *bool `json:"isActive"` // true switches it back on
}

// Create stores a webhook with a new signing secret, which it returns in
// plaintext this one time.
func (s *Service) Create(ctx context.Context, in Input) (*Webhook, string, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, "", err
	}
	if in.HTTPMethod == "" {
		in.HTTPMethod = "POST"
	}
	w := &Webhook{ID: store.NewID(), TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, IsActive: true,
		MaxRetries: DefaultMaxRetries, TimeoutMs: DefaultTimeoutMs, AutoDisableThreshold: DefaultAutoDisableThreshold}
	p := Patch{Name: &in.Name, Description: &in.Description, URL: &in.URL, SubscribedEvents: &in.SubscribedEvents,
		HTTPMethod: &in.HTTPMethod, CustomHeaders: &in.CustomHeaders, MaxRetries: in.MaxRetries, TimeoutMs: in.TimeoutMs,
		RateLimitPerMinute: in.RateLimitPerMinute, AutoDisableThreshold: in.AutoDisableThreshold, IsActive: in.IsActive}
	if err := s.apply(w, p); err != nil {
		return nil, "", err
	}
	secret := NewSecret()
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		w.CreatedAt, w.UpdatedAt = tx.Now(), tx.Now()
		if err := s.store.InsertWebhook(ctx, tx, w, s.box.Seal(secret)); err != nil {
			return err
		}
		_, err := tx.EmitData(ctx, EventWebhookCreated, sc, w)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	w.MaskedSecret = MaskedSecret
	return w, secret, nil
}

// Get returns a live webhook the scope may read; "Webhook not found"
// (store.ErrNotFound) otherwise.
func (s *Service) Get(ctx context.Context, id string) (*Webhook, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	w, err := s.store.GetWebhook(ctx, s.db, sc, id)
	return w, notFound(err)
}

// Update changes a webhook's settings (not its secret).
func (s *Service) Update(ctx context.Context, id string, p Patch) (*Webhook, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	var w *Webhook
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if w, err = s.store.GetWebhook(ctx, tx, sc, id); err != nil {
			return notFound(err)
		}
		if err := s.apply(w, p); err != nil {
			return err
		}
		w.UpdatedAt = tx.Now()
		if err := s.store.UpdateWebhook(ctx, tx, w); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventWebhookUpdated, sc, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Delete soft-deletes a webhook: it is no longer listed or delivered to.
func (s *Service) Delete(ctx context.Context, id string) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		w, err := s.store.GetWebhook(ctx, tx, sc, id)
		if err != nil {
			return notFound(err)
		}
		if err := s.store.DeleteWebhook(ctx, tx, sc.TenantID, id, tx.Now()); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventWebhookDeleted, sc, w)
		return err
	})
}

// Rotation is the result of RotateSecret: the new secret, shown this one
// time, and until when the previous one keeps signing.
type Rotation struct {
	Secret                  string    `json:"secret"`                  // the new secret, in plaintext
	PreviousSecretSetAt     time.Time `json:"previousSecretSetAt"`     // when this rotation happened
	PreviousSecretExpiresAt time.Time `json:"previousSecretExpiresAt"` // when the previous secret stops signing
}

// RotateSecret gives a webhook a new signing secret. For the rotation
// period deliveries are signed with both; then the previous one is
// dropped. A rotation within the period replaces the previous secret with
// the one being rotated out.
func (s *Service) RotateSecret(ctx context.Context, id string) (*Rotation, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	secret := NewSecret()
	var r *Rotation
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		w, err := s.store.GetWebhook(ctx, tx, sc, id)
		if err != nil {
			return notFound(err)
		}
		now := s.opts.Now().UTC().Truncate(time.Microsecond) // the clock Secrets judges the period by
		r = &Rotation{Secret: secret, PreviousSecretSetAt: now, PreviousSecretExpiresAt: now.Add(s.opts.RotationPeriod)}
		if err := s.store.RotateSecret(ctx, tx, sc.TenantID, id, s.box.Seal(secret), r); err != nil {
			return err
		}
		w.PreviousSecretSetAt, w.PreviousSecretExpiresAt = &r.PreviousSecretSetAt, &r.PreviousSecretExpiresAt
		_, err = tx.EmitData(ctx, EventWebhookSecretRotated, sc, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Filter selects webhooks: Search matches name or URL,
// case-insensitively. They are listed newest first; Limit defaults to 50.
type Filter struct {
	Search        string
	IsActive      *bool // nil: both active and inactive
	Limit, Offset int
}

// List returns a page of the scope's live webhooks and the total.
// With a search, the total counts at most
// store.SearchCap(ctx)+1 matches: store.CapTotal turns it into the total
// to report (store.SearchTotalCap) and whether it is capped.
func (s *Service) List(ctx context.Context, f Filter) ([]*Webhook, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	f.Limit = cmp.Or(f.Limit, 50)
	var items []*Webhook
	var total int
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error { // the page and the total of one snapshot
		var err error
		items, total, err = s.store.ListWebhooks(ctx, tx, sc, f)
		return err
	})
	return items, total, err
}

// Secrets returns the secrets that sign a webhook's deliveries now: the
// current one, then the previous one while its rotation period lasts.
func (s *Service) Secrets(ctx context.Context, id string) ([]string, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	var w *SealedWebhook
	err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		if _, err := s.store.GetWebhook(ctx, tx, sc, id); err != nil { // the scope may read it
			return err
		}
		var err error
		w, err = s.store.SealedWebhook(ctx, tx, sc.TenantID, id)
		return err
	})
	if err != nil {
		return nil, notFound(err)
	}
	return s.secretsOf(w)
}

// DropExpiredSecrets removes every previous secret whose rotation period
// has ended; the periodic job calls it.
func (s *Service) DropExpiredSecrets(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		n, err = s.store.DropExpiredSecrets(ctx, tx, s.opts.Now().UTC())
		return err
	})
	return n, err
}

// DropExpiredSecretsJob is the periodic job that ends rotation periods.
type DropExpiredSecretsJob struct{}

// Kind names the job.
func (DropExpiredSecretsJob) Kind() string { return "webhooks.drop_expired_secrets" }

type dropWorker struct{ svc *Service }

func (w dropWorker) Work(ctx context.Context, _ *jobs.Job[DropExpiredSecretsJob]) error {
	_, err := w.svc.DropExpiredSecrets(ctx)
	return err
}

// RegisterJobs hooks the area into the store and e (before e starts):
// an emit hook that turns every domain event into deliveries in the
// event's own transaction; the drains that send each webhook's
// deliveries (their own job queue, so deliveries never wait behind other
// work); the sweep that restarts queues whose drain died; the inbound
// message worker; and an hourly job that drops previous secrets whose
// rotation period ended (until then, Secrets already leaves them out).
// Deliveries, test sends, retries and inbound messages need it. Call it
// once per Service.
func (s *Service) RegisterJobs(e *jobs.Engine) error {
	s.jobs = e
	// Deliveries mostly wait on their targets: 30 at once unless the host
	// configures the queue.
	if err := jobs.Register(e, drainWorker{s}, &jobs.RegisterOpts{Queue: DeliveryQueue, MaxAttempts: 5, Workers: 30}); err != nil {
		return err
	}
	if err := jobs.Register(e, sweepWorker{s}, nil); err != nil {
		return err
	}
	e.Periodic(sweepEvery, func() jobs.Args { return SweepJob{} })
	if err := jobs.Register(e, dropWorker{s}, nil); err != nil {
		return err
	}
	if err := jobs.Register(e, inboundWorker{s}, nil); err != nil {
		return err
	}
	e.Periodic(time.Hour, func() jobs.Args { return DropExpiredSecretsJob{} })
	s.db.OnEmit(s.dispatch)
	return nil
}

// Wait waits for the queue wake-ups this process has started (after the
// transactions that emitted events committed) to finish. Call it before
// closing the database.
func (s *Service) Wait() { s.queues.Wait() }

// NewSecret returns a new signing secret: "whsec_" and the base64 of 32
// random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("webhooks: no randomness: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// apply validates p and writes it into w.
func (s *Service) apply(w *Webhook, p Patch) error {
	v := &store.ValidationError{}
	text := func(field string, value *string, required bool, limit int, dst *string) {
		if value == nil {
			return
		}
		switch {
		case required && strings.TrimSpace(*value) == "":
			v.Add(field, "is required")
		case utf8.RuneCountInString(*value) > limit:
			v.Add(field, fmt.Sprintf("must be at most %d characters", limit))
		case !store.Storable(*value):
			v.Add(field, "must be valid UTF-8 text without NUL characters")
		default:
			*dst = *value
		}
	}
	text("name", p.Name, true, maxName, &w.Name)
	text("description", p.Description, false, maxDescription, &w.Description)
	if p.URL != nil {
		if msg := s.checkURL(*p.URL); msg != "" {
			v.Add("url", msg)
		} else {
			w.URL = *p.URL
		}
	}
	if p.SubscribedEvents != nil {
		if msg := checkEvents(*p.SubscribedEvents); msg != "" {
			v.Add("subscribedEvents", msg)
		} else {
			w.SubscribedEvents = slices.Clone(*p.SubscribedEvents)
		}
	}
	if p.HTTPMethod != nil {
		if m := strings.ToUpper(*p.HTTPMethod); slices.Contains(Methods, m) {
			w.HTTPMethod = m
		} else {
			v.Add("httpMethod", "must be POST, PUT or PATCH")
		}
	}
	if p.CustomHeaders != nil {
		if msg := checkHeaders(*p.CustomHeaders); msg != "" {
			v.Add("customHeaders", msg)
		} else {
			w.CustomHeaders = *p.CustomHeaders
		}
	}
	if w.CustomHeaders == nil {
		w.CustomHeaders = map[string]string{}
	}
	number := func(field string, value *int, lo, hi int, dst *int) {
		if value == nil {
			return
		}
		if *value < lo || *value > hi {
			v.Add(field, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
			return
		}
		*dst = *value
	}
	number("maxRetries", p.MaxRetries, 0, maxMaxRetries, &w.MaxRetries)
	number("timeoutMs", p.TimeoutMs, minTimeoutMs, maxTimeoutMs, &w.TimeoutMs)
	number("rateLimitPerMinute", p.RateLimitPerMinute, 0, maxRateLimit, &w.RateLimitPerMinute)
	number("autoDisableThreshold", p.AutoDisableThreshold, 0, maxDisableThreshold, &w.AutoDisableThreshold)
	if p.IsActive != nil {
		w.IsActive = *p.IsActive
	}
	return v.Err()
}

// checkURL says what is wrong with a target URL, or "". Besides the
// shape, a target that is plainly not public once its host is
// canonicalised (netguard.CheckURL: an IP literal of a non-public range in
// any notation, IPv6 forms carrying one included, localhost, single-label,
// .local, .localhost, .internal and .home.arpa names) is refused unless
// private URLs are allowed; names are checked again, after DNS resolution,
// when a delivery connects.
func (s *Service) checkURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case strings.TrimSpace(raw) == "":
		return "is required"
	case len(raw) > maxURL:
		return fmt.Sprintf("must be at most %d characters", maxURL)
	case !store.Storable(raw):
		return "must be valid UTF-8 text without NUL characters"
	case err != nil || u.User != nil:
		return msgURLShape
	}
	switch err := netguard.CheckURL(raw, s.opts.AllowPrivateURLs); {
	case errors.Is(err, netguard.ErrBlocked):
		return "must not target a private, loopback or link-local address"
	case err != nil:
		return msgURLShape
	}
	return ""
}

const msgURLShape = "must be an http or https URL with a host (and no credentials)"

// checkEvents says what is wrong with a subscription list, or "".
func checkEvents(events []string) string {
	switch {
	case len(events) == 0:
		return "must list at least one event pattern"
	case len(events) > maxEvents:
		return fmt.Sprintf("must list at most %d event patterns", maxEvents)
	}
	for i, e := range events {
		if !ValidPattern(e) {
			return fmt.Sprintf("[%d] %q is not an event pattern: \"*\", or dot-separated lowercase names (letters, digits, _), optionally ending in \".*\"", i, e)
		}
	}
	return ""
}

// reservedHeader reports whether a header name is the signature's or the
// body's to set.
func reservedHeader(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "webhook-") || n == "content-type"
}

// checkHeaders says what is wrong with custom headers, or "".
func checkHeaders(headers map[string]string) string {
	if len(headers) > maxHeaders {
		return fmt.Sprintf("must have at most %d headers", maxHeaders)
	}
	for name, value := range headers {
		switch {
		case !validHeaderName(name):
			return fmt.Sprintf("%q is not a valid header name", name)
		case reservedHeader(name):
			return fmt.Sprintf("Header %q is reserved for webhook signing and cannot be overridden", name)
		case len(value) > maxHeaderValue || strings.ContainsAny(value, "\r\n\x00") || !utf8.ValidString(value):
			return fmt.Sprintf("the value of %q must be one line of at most %d characters", name, maxHeaderValue)
		}
	}
	return ""
}

// validHeaderName reports whether name is an HTTP token (RFC 9110).
func validHeaderName(name string) bool {
	if name == "" || len(name) > 100 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Errorf(store.ErrNotFound, "Webhook not found")
	}
	return err
}
