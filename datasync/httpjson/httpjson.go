package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/internal/netguard"
)

// ProviderKey is the integration provider key the adapter serves.
const ProviderKey = "sync_http_json"

// APIVersion is the one API version the adapter speaks; a Call with no
// API version speaks it too.
const APIVersion = "v1"

// Defaults of Options.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 32 << 20
)

// UserAgent is the User-Agent of the adapter's requests.
const UserAgent = "tenantkit-datasync"

// Limits on what a source may send.
const (
	// MaxExternalIDBytes bounds an external id (of an imported item or
	// an export result).
	MaxExternalIDBytes = 255
	// MaxCursorBytes bounds a page's nextCursor.
	MaxCursorBytes = 4096
	// maxErrorBytes bounds the error text of an export result and the
	// excerpt of an error response kept in a message.
	maxErrorBytes = 1000
	// maxSnippetBytes bounds the excerpt of an error response's body.
	maxSnippetBytes = 200
	// errorBodyRead is how much of an error response's body is read
	// (the excerpt is cut from it); errorBodyDrain how much more is read
	// and dropped so that the connection can be reused.
	errorBodyRead  = 4 << 10
	errorBodyDrain = 64 << 10
)

// Options configure an Adapter.
type Options struct {
	// AllowPrivate permits base URLs on loopback, private and other
	// non-public addresses (the host's APP_WEBHOOKS_ALLOW_PRIVATE_URLS).
	AllowPrivate bool
	// Timeout bounds one call (request and response body). Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds the body of a successful response. Zero
	// means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Client replaces the netguard client (for tests). Such a client
	// does not check the addresses it connects to; the base URL is still
	// checked before any request (netguard.CheckURL with AllowPrivate).
	Client *http.Client
	// Logger receives the details of failed requests (which may name
	// the server's resolver or addresses, so are kept out of errors).
	// Nil: not logged.
	Logger *slog.Logger
}

// Adapter is the sync_http_json adapter. It is safe for concurrent use.
type Adapter struct {
	allowPrivate bool
	timeout      time.Duration
	maxBytes     int64
	client       *http.Client
	logger       *slog.Logger
}

var (
	_ datasync.Adapter   = (*Adapter)(nil)
	_ datasync.Validator = (*Adapter)(nil)
)

// New returns the adapter.
func New(opts Options) *Adapter {
	a := &Adapter{
		allowPrivate: opts.AllowPrivate,
		timeout:      opts.Timeout,
		maxBytes:     opts.MaxResponseBytes,
		client:       opts.Client,
		logger:       opts.Logger,
	}
	if a.timeout <= 0 {
		a.timeout = DefaultTimeout
	}
	if a.maxBytes <= 0 {
		a.maxBytes = DefaultMaxResponseBytes
	}
	if a.client == nil {
		a.client = netguard.Client(netguard.Options{Timeout: a.timeout, AllowPrivate: a.allowPrivate})
	}
	return a
}

// ProviderKey returns "sync_http_json".
func (a *Adapter) ProviderKey() string { return ProviderKey }

// Directions returns import and export.
func (a *Adapter) Directions() []datasync.Direction {
	return []datasync.Direction{datasync.Import, datasync.Export}
}

// EntityTypes returns available unchanged: a source may hold records of
// any custom entity.
func (a *Adapter) EntityTypes(_ context.Context, available []string) []string { return available }

// Import reads one page: GET {baseUrl}/{entityType}?cursor=<cursor>&limit=<batchSize>
// (no cursor parameter on the first page).
func (a *Adapter) Import(ctx context.Context, c datasync.Call, cursor string, batchSize int) (*datasync.ImportBatch, error) {
	if batchSize < 1 {
		return nil, &datasync.SourceError{Message: fmt.Sprintf("batch size %d is not positive", batchSize)}
	}
	t, err := a.target(c)
	if err != nil {
		return nil, err
	}
	q := t.url.Query()
	q.Del("cursor")
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	q.Set("limit", strconv.Itoa(batchSize))
	t.url.RawQuery = q.Encode()
	status, body, err := a.do(ctx, c, t, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	page, err := decodePage(body, cursor, batchSize)
	if err != nil {
		return nil, &datasync.SourceError{Status: status, Message: "malformed page: " + redact(err.Error(), t.token)}
	}
	return page, nil
}

// Export sends one batch, POST {baseUrl}/{entityType} with
// {items:[{localId, data}]}, and returns a result per item, in the
// order of items. An empty batch sends nothing.
func (a *Adapter) Export(ctx context.Context, c datasync.Call, items []datasync.ExportItem) ([]datasync.ExportResult, error) {
	t, err := a.target(c)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return []datasync.ExportResult{}, nil
	}
	out := make([]datasync.ExportItem, len(items))
	for i, it := range items {
		if it.Data == nil {
			it.Data = map[string]any{}
		}
		out[i] = it
	}
	payload, err := json.Marshal(struct {
		Items []datasync.ExportItem `json:"items"`
	}{out})
	if err != nil {
		return nil, &datasync.SourceError{Message: "cannot encode the batch: " + err.Error()}
	}
	status, body, err := a.do(ctx, c, t, http.MethodPost, payload)
	if err != nil {
		return nil, err
	}
	results, err := decodeResults(body, items, t.token)
	if err != nil {
		return nil, &datasync.SourceError{Status: status, Message: "malformed export response: " + redact(err.Error(), t.token)}
	}
	return results, nil
}

// Validate checks the connection: GET {baseUrl}/{entityType}?limit=1
// must answer 2xx with a well-formed page.
func (a *Adapter) Validate(ctx context.Context, c datasync.Call) error {
	_, err := a.Import(ctx, c, "", 1)
	return err
}

// target is where a call goes: the entity type's URL and the token.
type target struct {
	url   *url.URL
	token string
}

// target reads a call's credentials: baseUrl (required, an absolute http
// or https URL allowed by the SSRF guard) and token (optional).
func (a *Adapter) target(c datasync.Call) (target, error) {
	fail := func(format string, args ...any) (target, error) {
		return target{}, &datasync.SourceError{Message: fmt.Sprintf(format, args...)}
	}
	if c.APIVersion != "" && c.APIVersion != APIVersion {
		return fail("API version %q is not supported (only %s)", truncate(c.APIVersion, 64), APIVersion)
	}
	if c.EntityType == "" || c.EntityType == "." || c.EntityType == ".." {
		return fail("entity type %q cannot name a URL path segment", c.EntityType)
	}
	raw, ok := c.Credentials["baseUrl"]
	if !ok || raw == nil || raw == "" {
		return fail("the baseUrl credential is missing")
	}
	base, ok := raw.(string)
	if !ok {
		return fail("the baseUrl credential must be a string")
	}
	base = strings.TrimSpace(base)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fail("the baseUrl credential must be an absolute http or https URL")
	}
	switch err := netguard.CheckURL(base, a.allowPrivate); {
	case errors.Is(err, netguard.ErrBlocked):
		return fail("the baseUrl credential points to a non-public address")
	case err != nil:
		return fail("the baseUrl credential must be an absolute http or https URL")
	}
	var token string
	switch v := c.Credentials["token"].(type) {
	case nil:
	case string:
		token = strings.TrimSpace(v)
		if !httpguts.ValidHeaderFieldValue(token) {
			return fail("the token credential has characters an HTTP header cannot carry")
		}
	default:
		return fail("the token credential must be a string")
	}
	escaped := strings.TrimRight(u.EscapedPath(), "/") + "/" + url.PathEscape(c.EntityType)
	path, err := url.PathUnescape(escaped)
	if err != nil {
		return fail("the baseUrl credential has a malformed path")
	}
	u.Path, u.RawPath = path, escaped
	u.Fragment, u.RawFragment = "", ""
	return target{url: u, token: token}, nil
}

// do makes one request and returns the status and body of a 2xx
// response, or the error a datasync run reads.
func (a *Adapter) do(ctx context.Context, c datasync.Call, t target, method string, body []byte) (int, []byte, error) {
	reqCtx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(reqCtx, method, t.url.String(), rd)
	if err != nil {
		return 0, nil, &datasync.SourceError{Message: "cannot build the request"}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, a.transportError(ctx, c, method, err)
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	if code < 200 || code > 299 {
		return code, nil, statusError(resp, t.token)
	}
	if resp.ContentLength > a.maxBytes {
		return code, nil, a.tooLarge(code)
	}
	var src io.Reader = resp.Body
	if c.MinBytesPerSecond > 0 {
		src = &meter{r: resp.Body, began: time.Now(), min: c.MinBytesPerSecond, grace: c.ThroughputGrace}
	}
	data, err := io.ReadAll(io.LimitReader(src, a.maxBytes+1))
	var slow *slowError
	if errors.As(err, &slow) {
		return code, nil, &datasync.SourceError{Status: code, Message: slow.Error()}
	}
	if err != nil {
		return code, nil, a.transportError(ctx, c, method, err)
	}
	if int64(len(data)) > a.maxBytes {
		return code, nil, a.tooLarge(code)
	}
	return code, data, nil
}

// meter reads a response body and fails the read once, grace or more
// after the body began, it has arrived at an average rate below min
// bytes a second. It judges as bytes arrive: a body that sends nothing at
// all is stopped by the call's time limit.
type meter struct {
	r     io.Reader
	began time.Time
	min   int64
	grace time.Duration
	n     int64
}

func (m *meter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.n += int64(n)
	if err == nil {
		if took := time.Since(m.began); took >= m.grace && float64(m.n) < float64(m.min)*took.Seconds() {
			return n, &slowError{n: m.n, took: took, min: m.min}
		}
	}
	return n, err
}

// slowError: a body arrived too slowly.
type slowError struct {
	n    int64
	took time.Duration
	min  int64
}

func (e *slowError) Error() string {
	return fmt.Sprintf("the source sent its answer too slowly: %d bytes in %s, below the minimum of %d bytes a second",
		e.n, e.took.Round(100*time.Millisecond), e.min)
}

func (a *Adapter) tooLarge(code int) error {
	limit := fmt.Sprintf("%d bytes", a.maxBytes)
	if a.maxBytes%(1<<20) == 0 {
		limit = fmt.Sprintf("%d MiB", a.maxBytes>>20)
	}
	return &datasync.SourceError{Status: code, Message: "response larger than " + limit}
}

// transportError is the error of a request that got no (complete)
// response. The caller's own cancellation comes back as it is (a
// cancelled run is not retried); otherwise a SourceError with
// netguard.Reason's generic text (retryable, except for an address the
// guard refuses), the detail going to the log.
func (a *Adapter) transportError(ctx context.Context, c datasync.Call, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("httpjson: %s %s: %w", method, c.EntityType, ctx.Err())
	}
	reason := netguard.Reason(err)
	if a.logger != nil {
		a.logger.Warn("datasync: sync_http_json request failed", "integration", c.IntegrationID,
			"entityType", c.EntityType, "method", method, "reason", reason, "err", err)
	}
	if errors.Is(err, netguard.ErrBlocked) {
		return &datasync.SourceError{Message: "request refused: the baseUrl host resolves to a non-public address"}
	}
	return &datasync.SourceError{Retryable: true, Message: "request failed: " + reason}
}

// statusError is the error of a non-2xx response: 408, 429 and 5xx are
// retryable, the others (401 and 403 included) are not. The message has
// the status text, Retry-After when given, and an excerpt of the body
// (with the token, should the source echo it, redacted).
func statusError(resp *http.Response, token string) error {
	code := resp.StatusCode
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyRead))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyDrain))
	msg := http.StatusText(code)
	if msg == "" {
		msg = "unexpected status"
	}
	retryable := code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
	switch {
	case code == http.StatusUnauthorized:
		msg += " (check the token)"
	case code == http.StatusForbidden:
		msg += " (the token is not allowed this)"
	case code >= 300 && code < 400:
		msg += " (redirects are not followed)"
	}
	if ra := sanitize(resp.Header.Get("Retry-After"), token, 64); ra != "" && retryable {
		msg += "; Retry-After: " + ra
	}
	if s := sanitize(string(raw), token, maxSnippetBytes); s != "" {
		msg += ": " + strconv.Quote(s)
	}
	return &datasync.SourceError{Status: code, Retryable: retryable, Message: msg}
}

// sanitize is clean(s, limit) with the token redacted (before, and after
// in case cleaning made it appear).
func sanitize(s, token string, limit int) string {
	return redact(clean(redact(s, token), limit), token)
}

// redact replaces the token in s.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[redacted]")
}

// clean makes text from a source fit for a message: valid UTF-8, control
// characters as spaces, runs of spaces collapsed, trimmed, at most limit
// bytes (cut on a rune boundary, with "…").
func clean(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return truncate(s, limit)
}

// truncate cuts s to at most limit bytes on a rune boundary, marking the
// cut with "…".
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(limit-len("…"), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
