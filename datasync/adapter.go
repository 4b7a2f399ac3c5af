package datasync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Direction is which way a run moves records.
type Direction string

// Directions.
const (
	Import Direction = "import"
	Export Direction = "export"
)

// Item is one record as a source sends it: its id at the source and its
// field values (keys are the custom entity's field keys).
type Item struct {
	ExternalID string         `json:"externalId"`
	Data       map[string]any `json:"data"` // field key to value
}

// ImportBatch is one page of a source.
type ImportBatch struct {
	Items []Item
	// NextCursor continues after this page; "" when it was the last.
	NextCursor string
	// TotalEstimate is the source's count of items, when it gives one.
	TotalEstimate *int64
}

// ExportItem is one local record to send.
type ExportItem struct {
	LocalID string         `json:"localId"`
	Data    map[string]any `json:"data"` // the record's values, field key to value
}

// ExportResult is what the target made of one exported record.
type ExportResult struct {
	LocalID    string `json:"localId"`
	ExternalID string `json:"externalId,omitempty"`
	// Status is success, error or skipped.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"` // why the target refused it (status error)
}

// Call is what an adapter call gets: the tenant's credentials of the
// integration (in clear), the API version it uses, the entity type, and
// the slowest the source may answer.
//
// The Service bounds every call in time itself (Options.PageTimeout, by
// the call's context); the throughput floor it cannot see, as only the
// adapter reads the source's bytes: an adapter that reads a response
// body should fail the call with a non-retryable *SourceError when,
// ThroughputGrace or more after the body began, it has arrived at a
// lower average rate than MinBytesPerSecond (sync_http_json does).
type Call struct {
	IntegrationID string
	Credentials   map[string]any // the tenant's credentials for the integration, in clear
	APIVersion    string         // the version the tenant uses; "" when unversioned
	EntityType    string
	// MinBytesPerSecond is the slowest average rate at which a response
	// body may arrive; 0 means no floor.
	MinBytesPerSecond int64
	// ThroughputGrace is how long a body may take before its rate is
	// judged.
	ThroughputGrace time.Duration
}

// Adapter moves records between tenantkit and one kind of source. Hosts
// register their own (Service.RegisterAdapter); sync_http_json is built
// in (package datasync/httpjson).
type Adapter interface {
	// ProviderKey is the integration provider key the adapter serves.
	ProviderKey() string
	// Directions are the directions it supports.
	Directions() []Direction
	// EntityTypes filters the tenant's entity types (the active custom
	// entities, given) to those it supports.
	EntityTypes(ctx context.Context, available []string) []string
	// Import reads one page after cursor ("" is the first page), at most
	// batchSize items.
	Import(ctx context.Context, c Call, cursor string, batchSize int) (*ImportBatch, error)
	// Export sends one batch and returns a result per item.
	Export(ctx context.Context, c Call, items []ExportItem) ([]ExportResult, error)
}

// Validator is an Adapter that can check its connection (POST
// /data_sync/validate).
type Validator interface {
	// Validate checks that the connection of c works (credentials,
	// address); nil means it does, a *SourceError says how it failed.
	Validate(ctx context.Context, c Call) error
}

// SourceError is an adapter's failure with the source's HTTP status:
// Retryable errors (5xx, 429, timeouts) are tried again with backoff;
// others (401, 403, a malformed page) fail the run at once.
type SourceError struct {
	Status    int  // the source's HTTP status; 0 when it did not answer
	Retryable bool // see the type comment
	Message   string
}

// Error returns the source's status, when there is one, and the message.
func (e *SourceError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("source answered %d: %s", e.Status, e.Message)
	}
	return e.Message
}

// retryable reports whether err is worth another attempt: a SourceError
// says so itself; any other error (a network failure) is.
func retryable(err error) bool {
	var se *SourceError
	if errors.As(err, &se) {
		return se.Retryable
	}
	return !errors.Is(err, context.Canceled)
}

// adapters is the registry of adapters by provider key.
type adapters struct {
	mu sync.RWMutex
	m  map[string]Adapter
}

// RegisterAdapter adds an adapter; its provider key must be new.
func (s *Service) RegisterAdapter(a Adapter) error {
	s.adapters.mu.Lock()
	defer s.adapters.mu.Unlock()
	if a.ProviderKey() == "" {
		return errors.New("datasync: an adapter needs a provider key")
	}
	if _, ok := s.adapters.m[a.ProviderKey()]; ok {
		return fmt.Errorf("datasync: an adapter for %s is already registered", a.ProviderKey())
	}
	if s.adapters.m == nil {
		s.adapters.m = map[string]Adapter{}
	}
	s.adapters.m[a.ProviderKey()] = a
	return nil
}

func (s *Service) adapter(providerKey string) (Adapter, bool) {
	s.adapters.mu.RLock()
	defer s.adapters.mu.RUnlock()
	a, ok := s.adapters.m[providerKey]
	return a, ok
}

func supports(a Adapter, d Direction) bool { return slices.Contains(a.Directions(), d) }
