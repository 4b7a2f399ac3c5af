package apikit

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// describe is an operation's description: the route's own Description
// (or its Summary), who may call it, and the error statuses it answers
// with what each means. Every operation has one, so that a reader of a
// generated client or of a linter's report does not need the Markdown.
func (rt Route) Describe() string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(cmp.Or(rt.Doc.Description, rt.Doc.Summary), ". "))
	b.WriteString(".\n\n")
	switch {
	case rt.Access.Public:
		b.WriteString("Needs no credential.")
	case rt.Access.OptionalAuth:
		b.WriteString("A credential is optional; one that is sent must be valid.")
	case rt.Access.SuperAdmin:
		b.WriteString("Needs a super admin's credential.")
	default:
		b.WriteString("Needs a credential")
		if len(rt.Access.Features) > 0 {
			b.WriteString(" holding the features " + strings.Join(rt.Access.Features, ", "))
		}
		b.WriteString(".")
	}
	if rt.Access.TenantWide {
		b.WriteString(" Changes a setting of every organization of the tenant: a caller limited to some organizations gets 403.")
	}
	var errs []string
	for _, s := range rt.ErrorStatuses() {
		errs = append(errs, strconv.Itoa(s)+": "+ErrorResponse(s, rt).Description)
	}
	for _, s := range slices.Sorted(maps.Keys(rt.Doc.ErrorTypes)) {
		errs = append(errs, strconv.Itoa(s)+": "+http.StatusText(s))
	}
	if len(errs) > 0 {
		b.WriteString("\n\nErrors:\n")
		for _, e := range append(errs, "5XX: internal error (the body never carries internals)") {
			b.WriteString("\n- " + e)
		}
	}
	return b.String()
}
