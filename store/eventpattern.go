package store

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"
)

// maxEventPattern bounds an event pattern's length.
const maxEventPattern = 200

// eventPattern is a subscription: "*", or dot-separated segments of
// lowercase letters, digits and '_', optionally ending in ".*".
var eventPattern = regexp.MustCompile(`^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$`)

// ValidEventPattern reports whether p is an event pattern EventMatches
// takes: "*", or dot-separated lowercase names (letters, digits, _),
// optionally ending in ".*", of at most 200 bytes. Webhook subscriptions
// and the events stream's filters are such patterns.
func ValidEventPattern(p string) bool {
	return len(p) <= maxEventPattern && eventPattern.MatchString(p)
}

// EventMatches reports whether the event type matches the pattern: "*"
// matches everything, "<prefix>.*" every event under the prefix (at any
// depth), anything else only itself.
func EventMatches(pattern, eventType string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, ".*"); ok {
		return strings.HasPrefix(eventType, prefix+".")
	}
	return pattern == eventType
}

// EventPayload is the JSON body an event is sent as, to a webhook or on
// the events stream: {type, timestamp, data, idempotencyKey}, whose
// idempotencyKey is the event's id, the same in every attempt, retry and
// resend.
func EventPayload(ev Event) ([]byte, error) {
	return json.Marshal(struct {
		Type           string          `json:"type"`
		Timestamp      time.Time       `json:"timestamp"`
		Data           json.RawMessage `json:"data"`
		IdempotencyKey string          `json:"idempotencyKey"`
	}{ev.Type, ev.OccurredAt, ev.Data, ev.ID})
}
