package rules

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// SetInput is a new rule set. Enabled defaults to true.
type SetInput struct {
	ID          string `json:"id" jsonschema:"required,minLength=1,maxLength=50,pattern=^[A-Z_]+$"`
	Name        string `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Description string `json:"description" jsonschema:"maxLength=2000"`
	Enabled     *bool  `json:"enabled"` // default true
}

// SetPatch changes a set; nil fields keep their value.
type SetPatch struct {
	Name        *string `json:"name" jsonschema:"minLength=1,maxLength=200"`
	Description *string `json:"description" jsonschema:"maxLength=2000"`
	Enabled     *bool   `json:"enabled"` // nil keeps it
}

// SetFilter selects sets: Search matches name or description,
// case-insensitively.
type SetFilter struct {
	Search string
	// Enabled, when not nil, selects enabled or disabled sets.
	Enabled *bool
	// Limit is the page size; Offset skips that many sets (oldest first).
	Limit, Offset int
}

// MemberInput adds a rule (by its business id) to a set. Enabled
// defaults to true.
type MemberInput struct {
	RuleID string `json:"ruleId" jsonschema:"required,minLength=1,description=The rule's business id (its ruleId) not its id"`
	// Sequence is required: 0 to 2147483647, ascending runs first.
	Sequence *int  `json:"sequence" jsonschema:"required,minimum=0,maximum=2147483647"`
	Enabled  *bool `json:"enabled"` // default true
}

// MemberPatch changes a membership; at least one field is required.
type MemberPatch struct {
	Sequence *int  `json:"sequence" jsonschema:"minimum=0,maximum=2147483647"` // nil keeps it
	Enabled  *bool `json:"enabled"`                                            // nil keeps it
}

// CreateSet stores a new set in the scope's tenant. A set id the tenant
// already has is a *CodedError SET_ALREADY_EXISTS (store.ErrConflict).
func (s *Service) CreateSet(ctx context.Context, in SetInput) (*RuleSet, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	rs := &RuleSet{ID: in.ID, Name: in.Name, Description: in.Description, Enabled: in.Enabled == nil || *in.Enabled}
	v := &store.ValidationError{}
	switch {
	case in.ID == "":
		v.Add("id", "is required")
	case len(in.ID) > maxSetID:
		v.Add("id", fmt.Sprintf("must be at most %d characters", maxSetID))
	case !setIDPattern.MatchString(in.ID):
		v.Add("id", "must contain only uppercase letters and underscores")
	}
	validateSetText(v, rs)
	if err := v.Err(); err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := s.store.GetSet(ctx, tx, sc.TenantID, rs.ID); err == nil {
			return setExists(rs.ID)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		rs.CreatedAt, rs.UpdatedAt = tx.Now(), tx.Now()
		if err := s.store.InsertSet(ctx, tx, sc.TenantID, rs); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return setExists(rs.ID)
			}
			return err
		}
		return s.record(ctx, tx, EventSetCreated, sc, rs)
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

func validateSetText(v *store.ValidationError, rs *RuleSet) {
	switch {
	case strings.TrimSpace(rs.Name) == "":
		v.Add("name", "is required")
	case utf8.RuneCountInString(rs.Name) > maxSetName:
		v.Add("name", fmt.Sprintf("must be at most %d characters", maxSetName))
	}
	if utf8.RuneCountInString(rs.Description) > maxSetDescription {
		v.Add("description", fmt.Sprintf("must be at most %d characters", maxSetDescription))
	}
	for field, text := range map[string]string{"name": rs.Name, "description": rs.Description} {
		if store.HasNUL(text) {
			v.Add(field, "must not contain the NUL character")
		}
	}
}

// UpdateSet changes a set's name, description or enabled flag.
func (s *Service) UpdateSet(ctx context.Context, id string, p SetPatch) (*RuleSet, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	var rs *RuleSet
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if rs, err = s.store.GetSet(ctx, tx, sc.TenantID, id); err != nil {
			return setNotFound(err, id)
		}
		if p.Name != nil {
			rs.Name = *p.Name
		}
		if p.Description != nil {
			rs.Description = *p.Description
		}
		if p.Enabled != nil {
			rs.Enabled = *p.Enabled
		}
		v := &store.ValidationError{}
		validateSetText(v, rs)
		if err := v.Err(); err != nil {
			return err
		}
		rs.UpdatedAt = tx.Now()
		if err := s.store.UpdateSet(ctx, tx, sc.TenantID, rs); err != nil {
			return err
		}
		return s.record(ctx, tx, EventSetUpdated, sc, rs)
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// GetSet returns a set with its members, ordered by sequence: those whose
// rules the scope may read (a member that is another organization's rule
// is left out, as ExecuteSet leaves it out).
func (s *Service) GetSet(ctx context.Context, id string) (*RuleSet, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	// The package's own store reads the set and its members in one
	// statement; a host's store (or one embedding SQLStore, which may
	// override either read) in a read transaction of two.
	var rs *RuleSet
	if st, ok := s.store.(*SQLStore); ok {
		if rs, err = st.setWithMembers(ctx, s.db, sc, id); err != nil {
			return nil, setNotFound(err, id)
		}
	} else if err = s.db.ReadTx(ctx, func(tx *store.Tx) error {
		var err error
		if rs, err = s.store.GetSet(ctx, tx, sc.TenantID, id); err != nil {
			return setNotFound(err, id)
		}
		members, err := s.store.ListMembers(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		rs.Members = make([]SetMember, len(members))
		for i, m := range members {
			rs.Members[i] = *m
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for i := range rs.Members {
		rs.Members[i].SetID = "" // the detail lists members without their set
	}
	return rs, nil
}

// DeleteSet deletes a set. A set with members is refused (SET_HAS_MEMBERS,
// store.ErrConflict, details.memberCount) unless force is true, which
// detaches them; rules are never deleted.
func (s *Service) DeleteSet(ctx context.Context, id string, force bool) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		rs, err := s.store.GetSet(ctx, tx, sc.TenantID, id)
		if err != nil {
			return setNotFound(err, id)
		}
		if rs.MemberCount > 0 && !force {
			return &CodedError{Kind: store.ErrConflict, Code: CodeSetHasMembers,
				Message: fmt.Sprintf("Rule set %s has %d member rules; delete with force=true to detach them", id, rs.MemberCount),
				Details: map[string]any{"memberCount": rs.MemberCount}}
		}
		if err := s.store.DeleteSet(ctx, tx, sc.TenantID, id); err != nil {
			return err
		}
		return s.record(ctx, tx, EventSetDeleted, sc, rs)
	})
}

// ListSets returns a page of the tenant's sets (without members) and the
// total. With a search, the total counts at most
// store.SearchCap(ctx)+1 matches: store.CapTotal turns it into the total
// to report (store.SearchTotalCap) and whether it is capped.
func (s *Service) ListSets(ctx context.Context, f SetFilter) ([]*RuleSet, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	return s.store.ListSets(ctx, s.db, sc.TenantID, f)
}

// AddMember puts a rule into a set: RULE_NOT_FOUND when the tenant has no
// live rule with that ruleId, RULE_ALREADY_IN_SET when it is a member.
func (s *Service) AddMember(ctx context.Context, setID string, in MemberInput) (*SetMember, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	v := &store.ValidationError{}
	if in.RuleID == "" {
		v.Add("ruleId", "is required")
	}
	if in.Sequence == nil {
		v.Add("sequence", "is required")
	} else if msg := checkSequence(*in.Sequence); msg != "" {
		v.Add("sequence", msg)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	var m *SetMember
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := s.store.GetSet(ctx, tx, sc.TenantID, setID); err != nil {
			return setNotFound(err, setID)
		}
		r, err := s.store.GetRuleByRuleID(ctx, tx, sc, in.RuleID)
		if errors.Is(err, store.ErrNotFound) {
			return &CodedError{Kind: store.ErrNotFound, Code: CodeRuleNotFound, Message: fmt.Sprintf("Rule %s not found", in.RuleID)}
		}
		if err != nil {
			return err
		}
		if _, err := s.store.GetMember(ctx, tx, sc.TenantID, setID, in.RuleID); err == nil {
			return alreadyInSet(in.RuleID, setID)
		}
		m = &SetMember{SetID: setID, RuleID: r.RuleID, RuleName: r.RuleName, RuleType: r.RuleType, Sequence: *in.Sequence,
			Enabled: in.Enabled == nil || *in.Enabled, AddedAt: tx.Now(), RuleUUID: r.ID}
		if err := s.store.InsertMember(ctx, tx, sc.TenantID, m); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return alreadyInSet(in.RuleID, setID)
			}
			return err
		}
		return s.record(ctx, tx, EventMemberAdded, sc, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// UpdateMember changes a member's sequence or enabled flag.
func (s *Service) UpdateMember(ctx context.Context, setID, ruleID string, p MemberPatch) (*SetMember, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if p.Sequence == nil && p.Enabled == nil {
		return nil, store.Invalid("sequence", "sequence or enabled is required")
	}
	if p.Sequence != nil {
		if msg := checkSequence(*p.Sequence); msg != "" {
			return nil, store.Invalid("sequence", msg)
		}
	}
	var m *SetMember
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if m, err = s.member(ctx, tx, sc.TenantID, setID, ruleID); err != nil {
			return err
		}
		if p.Sequence != nil {
			m.Sequence = *p.Sequence
		}
		if p.Enabled != nil {
			m.Enabled = *p.Enabled
		}
		now := tx.Now()
		m.UpdatedAt = &now
		if err := s.store.UpdateMember(ctx, tx, sc.TenantID, m); err != nil {
			return err
		}
		return s.record(ctx, tx, EventMemberUpdated, sc, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// RemoveMember takes a rule out of a set; the rule stays.
func (s *Service) RemoveMember(ctx context.Context, setID, ruleID string) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		m, err := s.member(ctx, tx, sc.TenantID, setID, ruleID)
		if err != nil {
			return err
		}
		if err := s.store.DeleteMember(ctx, tx, sc.TenantID, setID, m.RuleUUID); err != nil {
			return err
		}
		return s.record(ctx, tx, EventMemberRemoved, sc, m)
	})
}

// member finds a membership: SET_NOT_FOUND or MEMBER_NOT_FOUND otherwise.
func (s *Service) member(ctx context.Context, q store.Querier, tenantID, setID, ruleID string) (*SetMember, error) {
	if _, err := s.store.GetSet(ctx, q, tenantID, setID); err != nil {
		return nil, setNotFound(err, setID)
	}
	m, err := s.store.GetMember(ctx, q, tenantID, setID, ruleID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &CodedError{Kind: store.ErrNotFound, Code: CodeMemberNotFound,
			Message: fmt.Sprintf("Rule %s is not a member of set %s", ruleID, setID)}
	}
	return m, err
}

// checkSequence returns why a member sequence is refused, or "".
func checkSequence(n int) string {
	if n < 0 || n > math.MaxInt32 {
		return "must be an integer from 0 to 2147483647"
	}
	return ""
}

func setNotFound(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return &CodedError{Kind: store.ErrNotFound, Code: CodeSetNotFound, Message: fmt.Sprintf("Rule set %s not found", id)}
	}
	return err
}

func setExists(id string) error {
	return &CodedError{Kind: store.ErrConflict, Code: CodeSetExists, Message: fmt.Sprintf("Rule set %s already exists", id)}
}

func alreadyInSet(ruleID, setID string) error {
	return &CodedError{Kind: store.ErrConflict, Code: CodeRuleAlreadyInSet,
		Message: fmt.Sprintf("Rule %s is already in set %s", ruleID, setID)}
}
