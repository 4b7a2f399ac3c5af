package webhooks

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// DeliveryHealth is one webhook's deliveries over a window, counted by
// outcome (Service.DeliveryHealth).
type DeliveryHealth struct {
	WebhookID string `json:"webhookId"`
	Name      string `json:"name"`
	URL       string `json:"url"` // the webhook's target URL
	// Delivered counts deliveries the target accepted (StatusDelivered).
	Delivered int `json:"delivered"`
	// Failed counts deliveries that ended without the target accepting
	// them: given up (StatusFailed) or expired unsent (StatusExpired).
	Failed int `json:"failed"`
	// Pending counts deliveries not yet final: queued or waiting for a
	// retry (StatusPending), or with an attempt under way (StatusSending).
	Pending int `json:"pending"`
}

// DeliveryHealth reports, for each live (not deleted) webhook the
// context's scope may read (as List: the tenant's webhooks of no
// organization or of one the scope may read), inactive ones and ones
// without deliveries included (with zero counts), how its deliveries
// created at or after since (to the microsecond) stand now, ordered by
// name, then id (byte order). A missing scope is store.ErrNoScope.
//
// The statuses map to the counts so that every delivery is in exactly
// one:
//
//   - Delivered: delivered (a 2xx answer).
//   - Failed: failed (a response that is not retried, or the attempts
//     used up) and expired (never sent: the webhook was disabled or
//     deleted, or webhooks switched off, before its attempt). Both are
//     final and the target did not get the event; Retry can revive
//     either, and it is then pending again.
//   - Pending: pending (queued, or waiting for a retry after a failed
//     attempt) and sending (an attempt under way, or cut short by a drain
//     that died and to be sent again).
//
// A delivery is placed in the window by its creation (the event's
// dispatch, or the test send), counted by its status at the time of the
// call: one created before since and retried since is in no count. Test
// sends are deliveries of the webhook and are counted like the others, so
// the counts agree with ListDeliveries filtered by webhook and status.
func (s *Service) DeliveryHealth(ctx context.Context, since time.Time) ([]DeliveryHealth, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	hs, err := s.store.DeliveryHealth(ctx, s.db, sc, since)
	if err != nil {
		return nil, err
	}
	if hs == nil {
		hs = []DeliveryHealth{} // [] in JSON, not null
	}
	return hs, nil
}
