// Package stripeprovider is the Stripe payments.Provider (key "stripe"),
// built on stripe-go v82: every Stripe call goes through a per-call
// stripe.NewClient with the tenant's secret key over the provider's shared
// backends (never a global key, never hand-written HTTP).
//
// # Credentials
//
// A tenant's payments.Credentials for Stripe hold:
//
//   - secretKey (sk_... or a restricted rk_...): every API call. Missing, a
//     call fails with an error wrapping payments.ErrNotConfigured.
//   - publishableKey (pk_...): not used server-side; CreateSession passes
//     it on in ProviderData["publishableKey"] for the client.
//   - webhookSecret (whsec_...): VerifyWebhook. Missing, a webhook cannot
//     be verified and fails with payments.ErrVerification.
//
// Nothing here logs: stripe-go's own logger is silenced unless
// Options.Logger is set, and error messages carry Stripe's type, code,
// message and request id, never a key nor the objects (a PaymentIntent's
// client_secret) that stripe-go's error text would include.
//
// # Calls
//
//   - CreateSession creates a PaymentIntent: amount in minor units,
//     currency lower-cased, capture_method automatic or manual,
//     description, metadata (below), automatic_payment_methods enabled,
//     and the input's idempotency key (the transaction id when it has
//     none). SessionID is the PaymentIntent id, ClientSecret its
//     client_secret, ProviderData {paymentIntentId, publishableKey}. A new
//     PaymentIntent is requires_payment_method, so pending.
//   - Capture captures amount_to_capture (everything authorized when the
//     amount is 0); CapturedAmount is the PaymentIntent's amount_received.
//   - Refund creates a Refund of the PaymentIntent for the amount (what
//     remains when 0) with the mapped reason; RefundID is the refund's id.
//   - Cancel cancels the PaymentIntent; Status retrieves it.
//
// Every call is bounded by Options.Timeout (default 30s, retries
// included); stripe-go retries a failed request up to
// Options.MaxNetworkRetries times (default 2) with the same idempotency
// key. A key longer than Stripe's 255 characters is sent as its SHA-256.
//
// # Metadata
//
// Stripe allows 50 keys, keys of at most 40 characters (no square
// brackets) and values of at most 500. The metadata sent is transactionId
// (the transaction's id) first, then the caller's keys in sorted order
// until there are 50; a key that is empty, too long, holds '[' or ']', or
// is the caller's own transactionId is dropped, as is a nil value. Values
// are strings as they are, anything else as its JSON, cut to 500
// characters. The same input always gives the same metadata.
//
// # Refund reasons
//
// The caller's free-text reason (case and spaces ignored): "duplicate" →
// duplicate; "fraud" or "fraudulent" → fraudulent; anything else, empty
// included → requested_by_customer.
//
// # Statuses
//
// MapStatus(providerStatus, eventType) looks at the event type first:
//
//	payment_intent.succeeded                  captured
//	payment_intent.payment_failed             failed
//	payment_intent.canceled                   cancelled
//	payment_intent.requires_action            pending
//	payment_intent.amount_capturable_updated  authorized
//	charge.refunded                           refunded (partially_refunded, below)
//	charge.refund.updated                     refunded
//	charge.dispute.created                    failed
//	charge.dispute.closed                     captured
//
// then, for any other event or none, at the PaymentIntent status:
//
//	requires_payment_method, requires_confirmation,
//	requires_action, processing               pending
//	requires_capture                          authorized
//	succeeded                                 captured
//	canceled                                  cancelled
//	anything else                             unknown
//
// A partial refund: Stripe's charge.refunded event is sent for partial
// refunds too, and the charge's status stays "succeeded". So for
// charge.refunded VerifyWebhook reports ProviderStatus "partially_refunded"
// when the charge's amount_refunded is below its amount (or, without the
// amounts, when its refunded flag is false) and "refunded" otherwise, and
// MapStatus maps charge.refunded with "partially_refunded" to
// partially_refunded. charge.refund.updated carries the refund, not the
// charge's totals, and maps to refunded as the table says (the payments
// Service treats a refund event of less than was captured as partial).
//
// A partial capture: a PaymentIntent captured for less than its amount
// ends "succeeded" with amount_received below amount (Stripe releases the
// rest). VerifyWebhook (payment_intent.* events) and Status then report
// ProviderStatus or Status "partially_captured", which MapStatus maps to
// partially_captured, so the Service never counts the whole amount as
// captured.
//
// # Webhooks
//
// WebhookSessionID reads the unverified body: data.object.id for
// payment_intent.* events, data.object.payment_intent (an id or an
// expanded object) for charge.* events, disputes and refunds included, and
// for any other event that names one. A body that is not JSON, not an
// event, or names no PaymentIntent is an error.
//
// VerifyWebhook checks the Stripe-Signature header with stripe-go's
// webhook.ConstructEventWithOptions and the tenant's webhookSecret, within
// Options.WebhookTolerance (default 5 minutes), ignoring an API version
// mismatch (the account's version may differ from stripe-go's). Every
// failure wraps payments.ErrVerification. The event gives EventType,
// EventID and IdempotencyKey (both the event id), SessionID as above,
// ProviderStatus (the object's status: the PaymentIntent's, the charge's,
// the refund's or the dispute's, but see partial refunds above) and
// Amount: amount_received for payment_intent.* events, amount_refunded for
// charge.refunded, when the event carries it.
//
// # Errors
//
// A *stripe.Error becomes an *Error that wraps it and:
//
//   - HTTP 401 (a bad key) or 403 (a key without the permission) →
//     payments.ErrNotConfigured, without Stripe's message (it echoes part
//     of the key);
//   - a card_error, or an invalid_request_error with HTTP 400, 402 or 404
//     (an amount too large, a PaymentIntent in an unexpected state, a
//     refund beyond what is captured, no such PaymentIntent) →
//     payments.ErrDeclined with Stripe's message, shown to the caller;
//   - anything else (api_error, 5xx, rate limits, idempotency conflicts) →
//     a plain error, logged by the Service and shown as a 502.
//
// Errors that are not Stripe's (network, timeout) are plain errors too.
//
// # Tests
//
// The tests talk only to loopback: request shapes against stripe-mock,
// started from PATH when it is there (skipped otherwise; .ci/run installs
// it), flows against an in-memory stripe.Backend, and webhooks signed with
// webhook.GenerateTestSignedPayload.
package stripeprovider
