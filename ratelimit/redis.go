package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// consumeScript counts one request and returns {count, milliseconds until
// the key expires}. It runs atomically on the server, in one round trip:
// the window starts at the key's first request (INCR creating it), and the
// request that first exceeds the points starts the block by moving the
// expiry. A key without an expiry (written by something else) gets one.
var consumeScript = redis.NewScript(`
local points = tonumber(ARGV[1])
local count = redis.call('INCR', KEYS[1])
local ttl
if count == 1 then
  ttl = tonumber(ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    ttl = tonumber(ARGV[2])
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
end
local block = tonumber(ARGV[3])
if count == points + 1 and block > 0 then
  ttl = block
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {count, ttl}
`)

// Redis is a Limiter whose counters live in Redis, so every process using
// the same Redis shares them. Each Consume is one atomic script call (one
// round trip).
//
// When Redis cannot be reached, an in-memory limiter (the insurance) takes
// over for this process, and Redis is tried again after RetryAfter; the
// switch each way is logged once. Replies Redis does give but that are
// errors (a key of another type, say) are returned, and callers fail open.
type Redis struct {
	client     redis.UniversalClient
	owned      bool
	insurance  Limiter
	logger     *slog.Logger
	retryAfter time.Duration
	// downUntil is when Redis is next tried (Unix nanoseconds), 0 while it
	// answers.
	downUntil atomic.Int64
}

// RedisOptions tunes a Redis limiter. The zero value is ready to use.
type RedisOptions struct {
	// Insurance counts while Redis is unreachable. Defaults to NewMemory.
	Insurance Limiter
	// RetryAfter is how long the insurance serves alone after a failure
	// before Redis is tried again (default 1s).
	RetryAfter time.Duration
	// Logger receives the outage and recovery messages. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// NewRedis returns a limiter over client, which the caller keeps and
// closes. Give the client short timeouts: a request waits for them before
// the insurance takes over (OpenRedis sets 250 ms and no retries).
func NewRedis(client redis.UniversalClient, opts RedisOptions) *Redis {
	l := &Redis{client: client, insurance: opts.Insurance, logger: opts.Logger, retryAfter: opts.RetryAfter}
	if l.insurance == nil {
		l.insurance = NewMemory(MemoryOptions{})
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	if l.retryAfter <= 0 {
		l.retryAfter = time.Second
	}
	return l
}

// redisTimeout bounds each Redis operation of a client OpenRedis makes.
const redisTimeout = 250 * time.Millisecond

// OpenRedis connects to the Redis at url ("redis://host:port/db", the
// REDIS_URL form) with timeouts suited to a request path, and returns a
// limiter that owns the client (Close closes it). It does not wait for
// Redis to answer: while it does not, the insurance counts.
func OpenRedis(url string, opts RedisOptions) (*Redis, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: REDIS_URL: %w", err)
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = redisTimeout, redisTimeout, redisTimeout
	o.MaxRetries = -1   // no retries: the insurance is the fallback
	o.DialerRetries = 1 // one dial attempt per connection (go-redis default: 5)
	l := NewRedis(redis.NewClient(o), opts)
	l.owned = true
	return l, nil
}

// Close closes the client if OpenRedis created it.
func (l *Redis) Close() error {
	if l.owned {
		return l.client.Close()
	}
	return nil
}

// Consume implements Limiter.
func (l *Redis) Consume(ctx context.Context, key string, rule Rule) (Result, error) {
	if err := rule.Validate(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrInvalidRule, err)
	}
	if l.skipRedis() {
		return l.insurance.Consume(ctx, key, rule)
	}
	reply, err := consumeScript.Run(ctx, l.client, []string{key},
		rule.Points, rule.Duration.Milliseconds(), rule.BlockDuration.Milliseconds()).Int64Slice()
	if err != nil {
		if l.unreachable(ctx, err) {
			return l.insurance.Consume(ctx, key, rule)
		}
		return Result{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(reply) != 2 {
		return Result{}, fmt.Errorf("ratelimit: redis: unexpected reply %v", reply)
	}
	l.reachable()
	return result(rule, reply[0], time.Duration(reply[1])*time.Millisecond), nil
}

// Reset implements Limiter. It also forgets the key in the insurance, so a
// key reset during an outage starts afresh there too.
func (l *Redis) Reset(ctx context.Context, key string) error {
	ierr := l.insurance.Reset(ctx, key)
	if l.skipRedis() {
		return ierr
	}
	if err := l.client.Del(ctx, key).Err(); err != nil {
		if l.unreachable(ctx, err) {
			return ierr
		}
		return fmt.Errorf("ratelimit: redis: %w", err)
	}
	l.reachable()
	return ierr
}

// skipRedis reports whether Redis failed recently enough that the
// insurance serves alone.
func (l *Redis) skipRedis() bool {
	until := l.downUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// unreachable reports whether err means Redis could not be reached (as
// opposed to an error reply or the caller giving up), and if so starts or
// extends the outage.
func (l *Redis) unreachable(ctx context.Context, err error) bool {
	var reply redis.Error
	if errors.As(err, &reply) || ctx.Err() != nil {
		return false
	}
	if l.downUntil.Swap(time.Now().Add(l.retryAfter).UnixNano()) == 0 {
		l.logger.Warn("ratelimit: redis unreachable; counting in memory in this process until it answers", "err", err)
	}
	return true
}

// reachable ends an outage after Redis answered.
func (l *Redis) reachable() {
	if l.downUntil.Load() != 0 && l.downUntil.Swap(0) != 0 {
		l.logger.Info("ratelimit: redis answers again; counting in redis")
	}
}
