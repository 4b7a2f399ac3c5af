package notifications

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// Recipients finds the people a feed addresses. The notifications area
// knows no users: the Kit passes one over its identity service
// area when it has one; a host with its own identity system passes its own
// in Options.Recipients.
type Recipients interface {
	// Resolve returns the ids of the tenant's users that refs name, each
	// once: a ref is a user id, an email or a role name (every user
	// holding the role). A ref naming nobody is skipped.
	Resolve(ctx context.Context, tenantID string, refs []string) ([]string, error)
	// Holding returns the ids of the tenant's users who hold feature and
	// may read organization organizationID ("": whatever organizations
	// they may read).
	Holding(ctx context.Context, tenantID, organizationID, feature string) ([]string, error)
}

// SetRecipients sets the Recipients the feeds resolve people with, when
// Options.Recipients gave none. Call it before the Kit starts. Without
// one, NotifyRefs and NotifyHolding deliver nothing.
func (s *Service) SetRecipients(r Recipients) {
	if s.recipients == nil {
		s.recipients = r
	}
}

// NotifyRefs creates in for every user of the scope's tenant that refs
// name (Recipients.Resolve; in.Recipient is ignored), in one transaction,
// and returns how many it created. With in.DedupKey set, a user who
// already has that key gets nothing new, so a redelivered event adds
// nothing. Without a Recipients it creates nothing.
func (s *Service) NotifyRefs(ctx context.Context, refs []string, in CreateInput) (int, error) {
	return s.notifyResolved(ctx, in, func(tenantID string) ([]string, error) {
		return s.recipients.Resolve(ctx, tenantID, refs)
	})
}

// NotifyHolding is NotifyRefs for the users of the scope's tenant who
// hold feature and may read organization organizationID ("" for any;
// Recipients.Holding), so that what happens in one organization is told
// only to the people who may see it.
func (s *Service) NotifyHolding(ctx context.Context, organizationID, feature string, in CreateInput) (int, error) {
	return s.notifyResolved(ctx, in, func(tenantID string) ([]string, error) {
		return s.recipients.Holding(ctx, tenantID, organizationID, feature)
	})
}

func (s *Service) notifyResolved(ctx context.Context, in CreateInput, resolve func(tenantID string) ([]string, error)) (int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil || s.recipients == nil {
		return 0, err
	}
	ids, err := resolve(sc.TenantID)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	created := 0
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		created = 0
		for _, id := range ids {
			in.Recipient = id
			n, err := s.CreateTx(ctx, tx, in)
			if err != nil {
				return err
			}
			if n != nil {
				created++
			}
		}
		return nil
	})
	return created, err
}

// Clip makes s fit a text field of at most limit characters: invalid
// UTF-8 and NUL characters are dropped and a longer text is cut, ending
// in "…". Feeds pass other areas' text through it.
func Clip(s string, limit int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\x00", "")
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}
