package apikit

import (
	"net/http"

	"github.com/tenantkit/tenantkit/store"
)

// RequiredID reads the id query parameter of a delete.
func RequiredID(r *http.Request) (string, error) {
	id := r.URL.Query().Get("id")
	if id == "" {
		return "", store.Invalid("id", "is required")
	}
	return id, nil
}

var OkResponse = OkFlag{OK: true}

// OkFlag is the {ok: true} body of writes that answer nothing else.
type OkFlag struct {
	OK bool `json:"ok"`
}

// OkBody is {ok: true}.
var OkBody = OkFlag{OK: true}
