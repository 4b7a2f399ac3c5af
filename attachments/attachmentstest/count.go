package attachmentstest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
)

func (f *fixture) countAttachments(q store.Querier, tenant string) int {
	f.t.Helper()
	n, err := f.st.CountAttachments(f.ctx, q, tenant)
	f.must(err, "CountAttachments")
	return n
}

// testCountAttachments: CountAttachments counts the tenant's attachments
// of every organization (and of none), no other tenant's, follows inserts
// and deletes, and runs on the Querier it is given.
func testCountAttachments(t *testing.T, f *fixture) {
	other := store.NewID()
	f.equal("CountAttachments of a tenant with none", f.countAttachments(f.db, f.tenant), 0)
	f.partition(f.tenant, "docs", nil)
	f.partition(f.tenant, "media", nil)
	f.partition(other, "docs", nil)

	o1, o2 := store.NewID(), store.NewID()
	inOrg := func(org string) func(*attachments.Attachment) {
		return func(a *attachments.Attachment) { a.OrganizationID = org }
	}
	first := f.attachment(f.tenant, "docs", "tenant-wide.txt", nil)
	f.attachment(f.tenant, "docs", "of-o1.txt", inOrg(o1))
	f.attachment(f.tenant, "media", "of-o2.txt", inOrg(o2))
	f.attachment(f.tenant, "media", "also-o2.txt", inOrg(o2))
	// Another tenant's, one in an organization of the same id.
	f.attachment(other, "docs", "theirs.txt", nil)
	f.attachment(other, "docs", "theirs-o1.txt", inOrg(o1))

	f.equal("CountAttachments, every organization and partition", f.countAttachments(f.db, f.tenant), 4)
	f.equal("another tenant's CountAttachments", f.countAttachments(f.db, other), 2)
	f.equal("a third tenant's CountAttachments", f.countAttachments(f.db, store.NewID()), 0)

	f.must(f.deleteAttachment(f.tenant, first.ID), "DeleteAttachment")
	f.equal("CountAttachments after a delete", f.countAttachments(f.db, f.tenant), 3)
	f.equal("another tenant's CountAttachments after the delete", f.countAttachments(f.db, other), 2)

	// A transaction's own inserts count in it, and not after its rollback.
	err := f.tx(func(tx *store.Tx) error {
		if err := f.st.InsertAttachment(f.ctx, tx, f.newAttachment(f.tenant, "docs", "rolled-back.txt")); err != nil {
			return err
		}
		if n, err := f.st.CountAttachments(f.ctx, tx, f.tenant); err != nil || n != 4 {
			return fmt.Errorf("CountAttachments in the transaction: %d, %v (want 4)", n, err)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("the transaction: %v", err)
	}
	f.equal("CountAttachments after the rollback", f.countAttachments(f.db, f.tenant), 3)
}
