package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"
)

// The access log: with Options.AccessLog, one line per request at INFO
// ("http request"): requestId, method, route (the route's pattern, or
// "unmatched"), status, durationMs, tenantId (empty without a
// credential) and credential (api_key, session or none). It never holds a
// secret, a body or the query string. A request the chain answers with a
// 5xx is also logged with its cause, under the same requestId.

// noteRoute records the route that serves r, for the access log and
// metrics.
func noteRoute(r *http.Request, pattern string) {
	if st := stateOf(r.Context()); st != nil {
		st.route = pattern
	}
}

// observe writes each request's access line (Options.AccessLog) and
// counts it (Options.Metrics) once it is answered.
func (a *api) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logged := a.opts.AccessLog && a.logger.Enabled(r.Context(), slog.LevelInfo)
		if !logged && a.opts.Metrics == nil {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		info := stateOf(r.Context()) // withRequestID's, around this
		if info == nil {
			info = &requestState{Context: r.Context(), route: unmatchedRoute}
			r = r.WithContext(info)
		}
		info.sw = statusWriter{ResponseWriter: w}
		sw := &info.sw
		next.ServeHTTP(sw, r)
		elapsed := time.Since(start)
		if a.opts.Metrics != nil {
			a.opts.Metrics.ObserveRequest(r.Method, info.route, sw.status(), elapsed)
		}
		if !logged {
			return
		}
		tenant, credential := "", "none"
		if id := info.identity; id != nil {
			tenant, credential = id.TenantID, "session"
			if id.APIKeyID != "" {
				credential = "api_key"
			}
		}
		a.logAccess(r.Context(), start.Add(elapsed),
			slog.String("requestId", info.id),
			slog.String("method", r.Method),
			slog.String("route", info.route),
			slog.Int("status", sw.status()),
			slog.Float64("durationMs", float64(elapsed.Microseconds())/1000),
			slog.String("tenantId", tenant),
			slog.String("credential", credential))
	})
}

// accessPC is the program counter an access line's record names as its
// source (a handler with AddSource shows it): found once, not on every
// line as Logger.LogAttrs does.
var accessPC atomic.Uintptr

// logAccess hands the access line to the logger's handler, as
// Logger.LogAttrs would, with the time the request was answered (no
// second clock read) and accessPC.
func (a *api) logAccess(ctx context.Context, at time.Time, attrs ...slog.Attr) {
	pc := accessPC.Load()
	if pc == 0 {
		var pcs [1]uintptr
		runtime.Callers(2, pcs[:]) // observe's handler, LogAttrs' caller before
		pc = pcs[0]
		accessPC.Store(pc)
	}
	rec := slog.NewRecord(at, slog.LevelInfo, "http request", pc)
	rec.AddAttrs(attrs...)
	_ = a.logger.Handler().Handle(ctx, rec)
}

// statusWriter remembers the status a handler answers with. Unwrap lets
// http.ResponseController reach the connection (flush, deadlines), and
// ReadFrom keeps the underlying writer's sendfile path for files.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return io.Copy(w.ResponseWriter, src)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
