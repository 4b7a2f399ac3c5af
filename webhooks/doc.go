// Package webhooks is the outbound and inbound webhooks area.
//
// Status: built: outbound endpoints (create, read, update, soft delete,
// list, secret rotation), delivery of domain events with retries, test
// sends, the delivery log, the inbound receiver, and the global switch
// (SetEnabled; Options.Disabled). Not yet: delivering one webhook's
// events in order (issue 7 continues). Deliveries cut short by a crash are
// retried, with the same message id, once the job engine rescues their
// jobs (jobs.Config.RescueStuckAfter; River's default is an hour).
//
// # Delivery
//
// RegisterJobs subscribes to every committed domain event (except the
// area's own). For each active webhook of the event's tenant whose
// patterns match (a webhook of an organization only gets that
// organization's events and the tenant's), the subscriber stores a
// pending delivery and its job in one transaction; a repeated event
// creates nothing more (one delivery per webhook and event). Deliveries
// have their own job queue.
//
// An attempt POSTs (or PUTs or PATCHes) the body {type, timestamp, data}
// with content-type application/json, the custom headers, and the
// Standard Webhooks headers: webhook-id (the delivery's msg_ id, the same
// on every attempt), webhook-timestamp and webhook-signature (one v1
// signature per secret, so both during a rotation), through
// internal/netguard (non-public addresses refused after DNS resolution
// unless AllowPrivateURLs; no redirects followed), within the webhook's
// timeout. It keeps the status, up to 4096 bytes of the response body,
// up to 50 response headers, and the attempt's duration.
//
//   - 2xx: delivered; the webhook's consecutive failures go back to 0.
//   - 408, 429, 5xx and network errors: retried, as a new job scheduled
//     after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 14–24 h (±10%
//     jitter), or after Retry-After when a 429 or 503 asks for longer,
//     until maxRetries attempts (at least one) have been made; then failed.
//   - Other 4xx and refused addresses: failed at once. 410 also disables
//     the webhook.
//   - Every failed attempt counts: reaching autoDisableThreshold in a row
//     (0: never) disables the webhook. Disabling emits
//     webhooks.webhook.disabled.
//   - A delivery whose webhook was disabled or deleted before an attempt
//     expires unsent.
//   - rateLimitPerMinute > 0 spaces a webhook's attempts in each process
//     (golang.org/x/time/rate); an attempt that must wait is snoozed, not
//     counted.
//
// Test sends (Test) make one signed attempt at once, to an inactive
// webhook too, without retries and without counting against the webhook.
// Retry gives a failed or expired delivery one more attempt with the same
// message id.
//
// # Decisions where the spec is silent
//
//   - A signing secret is "whsec_" and the base64 of 32 random bytes. It is
//     stored sealed with the Kit's secret key (internal/secretbox) and
//     shown in plaintext only by Create and RotateSecret; reads show
//     MaskedSecret.
//   - After a rotation the previous secret keeps signing for
//     Options.RotationPeriod (24 hours by default); Secrets leaves it out
//     once that has passed, and an hourly job erases it. Rotating again
//     within the period replaces the previous secret with the one rotated
//     out.
//   - An event pattern is "*", or dot-separated segments of lowercase
//     letters, digits and '_', optionally ending in ".*", which matches
//     every event under that prefix at any depth.
//   - httpMethod is POST (default), PUT or PATCH. Custom headers must be
//     HTTP tokens; names starting "webhook-" and "content-type" are the
//     signature's and the body's and are refused.
//   - Settings: maxRetries 0–30 (10), timeoutMs 1000–60000 (15000),
//     rateLimitPerMinute 0–10000 (0, unlimited), autoDisableThreshold
//     0–1000 (100; 0 never disables).
//   - A target that is plainly not public is refused at create and update:
//     IP literals of private, loopback, link-local and other non-public
//     ranges, "localhost", single-label names and .local, .localhost and
//     .internal names, unless Options.AllowPrivateURLs. Other names are
//     not resolved then (a name's addresses can change): deliveries check
//     the address they connect to (internal/netguard).
//   - Update is partial: fields left out keep their value (the body of
//     PUT /webhooks/{id}).
//   - Webhooks are stamped with the scope's organization and readable by
//     scopes that may read it.
//
// # Inbound
//
// AddEndpoint registers an inbound endpoint: an Adapter (verify, parse,
// process) and optionally the tenant its messages belong to. The built-in
// StandardAdapter verifies Standard Webhooks headers with a secret (5
// minutes' tolerance). Receive verifies a request, then stores the message
// keyed by endpoint and message id with its job, in one transaction; a
// message id seen before is a duplicate and is not processed again. The
// job runs the adapter's Process, then marks the message processed and
// emits webhooks.inbound.received {endpointId, messageId, type, payload},
// together, for the host to handle.
//
// # Events
//
// webhooks.webhook.created|updated|deleted|secret_rotated, with the
// webhook (never its secret), in the change's transaction, and
// webhooks.webhook.disabled when deliveries disable one. None of them is
// delivered to webhooks.
package webhooks
