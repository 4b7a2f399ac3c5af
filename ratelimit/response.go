package ratelimit

import (
	"encoding/json"
	"net/http"
	"strconv"

	"golang.org/x/text/language"
)

// catalog is the 429 message per language, English first (the default).
// It is generic on purpose: it never says whether an account exists.
var catalog = []struct {
	tag     language.Tag
	message string
}{
	{language.English, "Too many requests. Please try again later."},
	{language.German, "Zu viele Anfragen. Bitte versuchen Sie es später erneut."},
	{language.Spanish, "Demasiadas solicitudes. Inténtelo de nuevo más tarde."},
	{language.French, "Trop de requêtes. Veuillez réessayer plus tard."},
	{language.Italian, "Troppe richieste. Riprova più tardi."},
	{language.Polish, "Zbyt wiele żądań. Spróbuj ponownie później."},
	{language.Portuguese, "Muitas solicitações. Tente novamente mais tarde."},
}

var matcher = func() language.Matcher {
	tags := make([]language.Tag, len(catalog))
	for i, c := range catalog {
		tags[i] = c.tag
	}
	return language.NewMatcher(tags)
}()

// Message returns the 429 message in the best language for an
// Accept-Language header value, English when none matches.
func Message(acceptLanguage string) string {
	tags, _, _ := language.ParseAcceptLanguage(acceptLanguage)
	_, i, confidence := matcher.Match(tags...)
	if confidence == language.No {
		i = 0
	}
	return catalog[i].message
}

// WriteLimited writes the 429 response of a refused request: the body
// {"error": message} in the caller's language, and the headers
// Retry-After and X-RateLimit-Reset (seconds until the key may retry),
// X-RateLimit-Limit (the rule's points) and X-RateLimit-Remaining (0).
func WriteLimited(w http.ResponseWriter, r *http.Request, res Result) {
	wait := strconv.FormatInt(res.RetryAfterSeconds(), 10)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", wait)
	h.Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", wait)
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": Message(r.Header.Get("Accept-Language"))})
}
