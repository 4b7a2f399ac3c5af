package rules_test

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// hostStore is a host's Store built on SQLStore: the service reads a
// set's detail through its GetSet and ListMembers (in a read transaction)
// rather than SQLStore's one statement.
type hostStore struct{ *rules.SQLStore }

// TestGetSetEitherStore: a set's detail is the same read in one
// statement (the package's own store) as through a host's store's GetSet
// and ListMembers: members of every organization the scope may read, in
// sequence order, the count of every organization's, and a set whose
// members are all hidden found without them.
func TestGetSetEitherStore(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		own := must(rules.New(db, rules.Options{}))
		host := must(rules.New(db, rules.Options{Store: hostStore{rules.NewSQLStore()}}))
		tenant, o1, o2 := store.NewID(), store.NewID(), store.NewID()
		scoped := func(sc store.Scope) context.Context { return store.WithScope(t.Context(), sc) }
		whole := scoped(store.Scope{TenantID: tenant})
		inO1 := scoped(store.Scope{TenantID: tenant, OrganizationID: o1})
		onlyO2 := scoped(store.Scope{TenantID: tenant, OrganizationID: o2, OrganizationIDs: []string{o2}})
		createRule(t, own, inO1, ruleInput("O1_RULE"))
		createRule(t, own, whole, ruleInput("B_RULE"))
		createRule(t, own, whole, ruleInput("A_RULE"))
		createSet(t, own, whole, "MIXED")
		addMember(t, own, inO1, "MIXED", "O1_RULE", 5)
		addMember(t, own, whole, "MIXED", "B_RULE", 10)
		addMember(t, own, whole, "MIXED", "A_RULE", 10)
		createSet(t, own, whole, "HIDDEN")
		addMember(t, own, inO1, "HIDDEN", "O1_RULE", 1)
		createSet(t, own, whole, "EMPTY")

		for _, c := range []struct {
			ctx     context.Context
			set     string
			members []string
			count   int
		}{
			{whole, "MIXED", []string{"O1_RULE", "A_RULE", "B_RULE"}, 3},
			{onlyO2, "MIXED", []string{"A_RULE", "B_RULE"}, 3},
			{onlyO2, "HIDDEN", []string{}, 1},
			{inO1, "HIDDEN", []string{"O1_RULE"}, 1},
			{whole, "EMPTY", []string{}, 0},
		} {
			for _, svc := range []*rules.Service{own, host} {
				rs, err := svc.GetSet(c.ctx, c.set)
				is.NoErr(err)
				is.Equal(rs.ID, c.set)
				is.Equal(memberIDs(rs.Members), c.members)
				is.Equal(rs.MemberCount, c.count)
				for _, m := range rs.Members {
					is.Equal(m.SetID, "") // the detail lists members without their set
				}
			}
		}
		for _, svc := range []*rules.Service{own, host} {
			_, err := svc.GetSet(whole, "MISSING")
			wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
			_, err = svc.GetSet(scoped(store.Scope{TenantID: store.NewID()}), "MIXED") // another tenant's
			wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		}
	}, rules.Migrations)
}
