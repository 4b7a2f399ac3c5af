// Package ratelimit limits requests per key: the limiters (in memory and in
// Redis), the client-address rules, the authentication-endpoint policy and
// the 429 response.
//
// # Semantics
//
// A Rule allows Points requests in a fixed window of Duration that starts
// at a key's first request (not at a clock boundary) and ends Duration
// later. The request that first exceeds Points is refused, and when
// BlockDuration is positive it blocks the key for BlockDuration from that
// request, even past the window's end; further refused requests neither
// count nor extend the block. Without a block a key is refused until its
// window ends. Reset forgets a key. This is the model of
// rate-limiter-flexible, so limits and headers behave as its clients
// expect.
//
// # Backends
//
// Memory (NewMemory) keeps counters in the process, in 64 independently
// locked shards: a Consume of an existing key takes one shard lock and
// allocates nothing. It holds at most MaxKeys keys; a new key sweeps a few
// random expired keys, and a full shard evicts the sampled key whose window
// ends soonest, so a flood of distinct keys costs bounded memory (an evicted
// key starts afresh, the price of the bound).
//
// Redis (NewRedis, OpenRedis) runs one Lua script per Consume (one round
// trip, atomic on the server). If Redis cannot be reached, an in-memory
// limiter takes over in that process, Redis is tried again a second later,
// and the switch each way is logged once. Error replies are returned, and
// the Policy lets the request through (fail open): a broken limiter never
// blocks traffic.
//
// The conformance suite in ratelimittest checks both backends (and any
// Limiter a host writes) against these semantics.
//
// # Client address
//
// ClientIP follows RATE_LIMIT_TRUST_PROXY_DEPTH:
// depth 0 ignores X-Forwarded-For and X-Real-IP, and all requests to an
// endpoint share one bucket (SharedBucket, "global"); depth N reads the Nth
// X-Forwarded-For entry from the end; a shorter chain, or an entry that is
// not an address, uses the shared bucket. The connection's own address is
// never used. Decision: an entry may carry a port ("1.2.3.4:80"); addresses
// are canonicalised so one client has one key. IPv6 clients are keyed per
// address, not per /64.
//
// # Authentication endpoints
//
// Policy.CheckAuth applies the IP layer (keys "<prefix>:login-ip:<client>",
// "reset-ip", "reset-confirm") before the body is read, and
// Policy.CheckAuthAccount the account layer ("<prefix>:login:<client>:
// <sha256(email)>", "reset"), before validation or any database work. The
// email is trimmed and lower-cased before hashing, so one account has one
// counter; the raw email never appears in a key. A successful sign-in
// resets the account counter (best effort, never failing the request) but
// not the IP counter. An empty email skips the account layer (the request
// fails validation anyway).
//
// # Configuration
//
// ConfigFromEnv reads the rate-limit variables (RATE_LIMIT_*, REDIS_URL,
// APP_INTEGRATION_TEST, APP_TEST_MODE with APP_TEST_AUTH_RATE_LIMIT_MODE).
// Rule values are whole numbers
// (seconds for durations); a duration must be at least 1 s; an invalid rule
// value warns and keeps the default, while an invalid RATE_LIMIT_ENABLED or
// RATE_LIMIT_STRATEGY fails the start, as does the redis strategy without
// REDIS_URL.
//
// # Response
//
// WriteLimited writes the 429: {"error": message}, the message localised
// by Accept-Language (English, German, Spanish, French, Italian, Polish,
// Portuguese; English by default) and generic, so it never tells whether an
// account exists; headers Retry-After and X-RateLimit-Reset (seconds,
// rounded up), X-RateLimit-Limit and X-RateLimit-Remaining (0), on 429
// responses only.
package ratelimit
