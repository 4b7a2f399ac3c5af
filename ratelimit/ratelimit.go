package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Rule is one limit: Points requests per window of Duration, counted from a
// key's first request. When a request exceeds the points and BlockDuration
// is positive, the key is refused for BlockDuration from that request, even
// past the window's end.
type Rule struct {
	// Points is how many requests a window allows. Zero refuses every
	// request.
	Points int
	// Duration is the length of a window. It must be positive.
	Duration time.Duration
	// BlockDuration, if positive, is how long a key stays refused after it
	// first exceeds Points. Zero refuses only until the window ends.
	BlockDuration time.Duration
}

// Validate reports a rule no limiter can apply.
func (r Rule) Validate() error {
	switch {
	case r.Points < 0:
		return fmt.Errorf("ratelimit: Points must not be negative (got %d)", r.Points)
	case r.Duration < time.Millisecond:
		return fmt.Errorf("ratelimit: Duration must be at least 1ms (got %s)", r.Duration)
	case r.BlockDuration < 0:
		return fmt.Errorf("ratelimit: BlockDuration must not be negative (got %s)", r.BlockDuration)
	}
	return nil
}

// Result is the outcome of one Consume.
type Result struct {
	// Allowed is false when the request must be refused.
	Allowed bool
	// Limit is the rule's Points.
	Limit int
	// Remaining is how many more requests the window allows; 0 when
	// refused.
	Remaining int
	// ResetAfter is the time until the key's window (or block) ends: when
	// refused, how long the caller must wait before a request can pass.
	ResetAfter time.Duration
}

// RetryAfterSeconds is ResetAfter rounded up to whole seconds (at least 1),
// the value of the Retry-After and X-RateLimit-Reset headers.
func (r Result) RetryAfterSeconds() int64 {
	s := int64((r.ResetAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Limiter counts requests per key. Implementations are safe for concurrent
// use. Keys are opaque strings; callers put their own prefixes in them.
type Limiter interface {
	// Consume counts one request against key under rule and reports
	// whether it is allowed. An error means the limiter could not decide;
	// callers let the request through (fail open).
	Consume(ctx context.Context, key string, rule Rule) (Result, error)
	// Reset forgets key, so its next request starts a new window.
	// Resetting an unknown key is not an error.
	Reset(ctx context.Context, key string) error
}

// ErrInvalidRule is returned by Consume for a rule that fails Validate.
var ErrInvalidRule = errors.New("ratelimit: invalid rule")

// LimitedError is the error a request refused by a limit carries up to the
// code that writes the response (see WriteLimited).
type LimitedError struct {
	Result Result // the refusing decision: limit and when to retry
}

// Error says the limit is exceeded and when to retry, in seconds.
func (e *LimitedError) Error() string {
	return fmt.Sprintf("rate limit exceeded: retry after %ds", e.Result.RetryAfterSeconds())
}
