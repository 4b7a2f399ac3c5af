package httpapi

import (
	"cmp"
	"strconv"
	"strings"
)

// describe is an operation's description: the route's own Description
// (or its Summary), who may call it, and the error statuses it answers
// with what each means. Every operation has one, so that a reader of a
// generated client or of a linter's report does not need the Markdown.
func (rt route) describe() string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(cmp.Or(rt.Description, rt.Summary), ". "))
	b.WriteString(".\n\n")
	switch {
	case rt.Public:
		b.WriteString("Needs no credential.")
	case rt.OptionalAuth:
		b.WriteString("A credential is optional; one that is sent must be valid.")
	case rt.SuperAdmin:
		b.WriteString("Needs a super admin's credential.")
	default:
		b.WriteString("Needs a credential")
		if len(rt.Features) > 0 {
			b.WriteString(" holding the features " + strings.Join(rt.Features, ", "))
		}
		b.WriteString(".")
	}
	if rt.TenantWide {
		b.WriteString(" Changes a setting of every organization of the tenant: a caller limited to some organizations gets 403.")
	}
	statuses := rt.errorStatuses()
	if len(statuses) > 0 {
		b.WriteString("\n\nErrors:")
		for _, s := range statuses {
			b.WriteString(" " + strconv.Itoa(s) + " " + errorResponse(s, rt).Description + ";")
		}
		b.WriteString(" 5XX internal error (the body never carries internals).")
	}
	return b.String()
}
