package integrations

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// Logger writes integration log entries. The Service implements it; other
// areas get it through the Kit (payments logs under gateway_<provider>)
// and call it with the scope of the tenant the entry belongs to in ctx.
type Logger interface {
	// Log stores e for the tenant in ctx's scope.
	Log(ctx context.Context, e LogEntry) error
}

// Limits of a log entry.
const (
	MaxLogMessage = 4000
	// maxLogField bounds runId, code, entityType and entityId.
	maxLogField   = 255
	MaxLogPayload = 64 << 10
)

var levels = []string{LevelInfo, LevelWarn, LevelError}

// Log writes an entry for the tenant in ctx's scope, in a transaction of
// its own. IntegrationID, Level (info, warn or error) and Message are
// required; a message longer than MaxLogMessage is cut (the other text
// fields at 255 bytes, all made valid UTF-8 without NUL), a payload larger
// than MaxLogPayload or not JSON is replaced by a note saying so, so that
// logging never fails on what a provider sent.
func (s *Service) Log(ctx context.Context, e LogEntry) error {
	return s.LogTx(ctx, s.db, e)
}

// LogTx is Log on q: the transaction of the work being logged, so that
// the entry commits (or not) with it.
func (s *Service) LogTx(ctx context.Context, q store.Querier, e LogEntry) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	if e.IntegrationID == "" || !slices.Contains(levels, e.Level) || e.Message == "" {
		return fmt.Errorf("integrations: a log entry needs an IntegrationID, a Level (info, warn, error) and a Message")
	}
	e.ID, e.TenantID, e.CreatedAt = store.NewID(), sc.TenantID, s.db.Now()
	e.Message = clip(e.Message, MaxLogMessage)
	for _, f := range []**string{&e.RunID, &e.Code, &e.EntityType, &e.EntityID} {
		if *f != nil {
			v := clip(**f, maxLogField)
			*f = &v
		}
	}
	if len(e.Payload) > 0 && (len(e.Payload) > MaxLogPayload || !json.Valid(e.Payload) || store.JSONHasNUL(e.Payload)) {
		e.Payload, _ = json.Marshal(map[string]any{"omitted": "payload not JSON or larger than 64 KiB", "bytes": len(e.Payload)})
	}
	return s.store.InsertLog(ctx, q, &e)
}

// clip cuts s to at most n bytes on a rune boundary and makes it storable
// (valid UTF-8, no NUL).
func clip(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Logs returns a page of the caller's tenant's log entries matching f,
// newest first, and the total.
func (s *Service) Logs(ctx context.Context, f LogFilter) ([]*LogEntry, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	if f.Level != "" && !slices.Contains(levels, f.Level) {
		return nil, 0, store.Invalid("level", "must be info, warn or error")
	}
	for field, v := range map[string]string{"integrationId": f.IntegrationID, "runId": f.RunID, "entityType": f.EntityType, "entityId": f.EntityID} {
		if !store.Storable(v) {
			return nil, 0, store.Invalid(field, "must be valid UTF-8 text without NUL characters")
		}
	}
	items, total, err := s.store.ListLogs(ctx, s.db, sc.TenantID, f)
	if items == nil {
		items = []*LogEntry{}
	}
	return items, total, err
}
