package attachments_test

import (
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Every Service method keeps two tenants apart: B neither sees nor
// changes anything of A's, whatever ids it names, and A's data is intact
// afterwards.
func TestTwoTenants(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		blobs := attachments.NewMemBlobs()
		ocr := &fakeOCR{text: "ocr text"}
		svc := newService(db, attachments.Options{Blobs: blobs, OCR: ocr, TenantQuotaBytes: 1 << 20})
		a, b := newTenant(t), newTenant(t)

		// A's data: a partition of its own, files on orders/R1 (one public).
		aPart, err := svc.CreatePartition(a.ctx, attachments.PartitionInput{Code: "contracts", Title: "Contracts"})
		is.NoErr(err)
		aDoc := upload(t, svc, a.ctx, "R1", "contract.txt", []byte("signed contract"), func(in *attachments.UploadInput) {
			in.PartitionCode, in.Tags = "contracts", []string{"legal"}
		})
		aImg := upload(t, svc, a.ctx, "R1", "logo.png", pngImage(t, 30, 20), func(in *attachments.UploadInput) {
			in.PartitionCode, in.Tags = attachments.PublicPartition, []string{"brand"}
		})
		// B's: the same entity and record ids, the same tag.
		bDoc := upload(t, svc, b.ctx, "R1", "b-notes.txt", []byte("b notes"), func(in *attachments.UploadInput) { in.Tags = []string{"legal"} })

		// Partitions: B lists its own only, and cannot reach A's by id.
		list, err := svc.Partitions(b.ctx)
		is.NoErr(err)
		for _, p := range list {
			is.True(p.ID != aPart.ID && p.Code != "contracts") // B sees A's partition
		}
		is.Equal(len(list), 2)
		_, err = svc.UpdatePartition(b.ctx, attachments.PartitionInput{ID: aPart.ID, Code: "contracts", Title: "Hijacked"})
		is.True(errors.Is(err, attachments.ErrPartitionNotFound))
		is.True(errors.Is(svc.DeletePartition(b.ctx, aPart.ID), attachments.ErrPartitionNotFound))
		aDefaults, err := svc.Partitions(a.ctx)
		is.NoErr(err)
		for _, p := range aDefaults {
			if p.ID == aPart.ID {
				is.Equal(p.Title, "Contracts") // A's partition after B's update
			}
			// B cannot delete A's defaults either (not found before default).
			is.True(errors.Is(svc.DeletePartition(b.ctx, p.ID), attachments.ErrPartitionNotFound))
		}
		is.Equal(len(aDefaults), 3)

		// CreatePartition: the same code in B is B's own.
		bPart, err := svc.CreatePartition(b.ctx, attachments.PartitionInput{Code: "contracts", Title: "B contracts", IsPublic: boolp(true)})
		is.NoErr(err)
		is.True(bPart.ID != aPart.ID)
		is.NoErr(svc.DeletePartition(b.ctx, bPart.ID)) // B's is not in use, though A's of that code is
		is.True(errors.Is(svc.DeletePartition(a.ctx, aPart.ID), attachments.ErrPartitionInUse))

		// Upload: B cannot use A's partition, nor A's staged file; A's
		// usage does not count against B.
		_, err = svc.Upload(b.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "x.txt",
			File: readerOf("x"), PartitionCode: "contracts"})
		is.True(errors.Is(err, store.ErrInvalid))
		staged, err := svc.Stage(a.ctx, "staged.txt", readerOf("staged by A"))
		is.NoErr(err)
		_, err = svc.Upload(b.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", Staged: staged})
		is.True(errors.Is(err, store.ErrInvalid))
		is.Equal(usage(t, db, b.id), int64(len("b notes")))
		is.Equal(usage(t, db, a.id), aDoc.FileSize+aImg.FileSize)

		// ForRecord, Library, Get: B's own only.
		recs, err := svc.ForRecord(b.ctx, "orders", "R1")
		is.NoErr(err)
		is.Equal(fileNames(recs), []string{"b-notes.txt"})
		recs, err = svc.ForRecord(a.ctx, "orders", "R1")
		is.NoErr(err)
		is.Equal(fileNames(recs), []string{"logo.png", "contract.txt"})
		page, err := svc.Library(b.ctx, attachments.LibraryQuery{LibraryFilter: attachments.LibraryFilter{Tags: []string{"legal"}}})
		is.NoErr(err)
		is.Equal(fileNames(page.Items), []string{"b-notes.txt"})
		is.Equal(page.Total, 1)
		is.Equal(page.AvailableTags, []string{"legal"}) // not A's brand tag
		page, err = svc.Library(b.ctx, attachments.LibraryQuery{LibraryFilter: attachments.LibraryFilter{Search: "contract"}})
		is.NoErr(err)
		is.Equal(page.Total, 0)
		page, err = svc.Library(b.ctx, attachments.LibraryQuery{LibraryFilter: attachments.LibraryFilter{Partition: "contracts"}})
		is.NoErr(err)
		is.Equal(page.Total, 0)
		for _, id := range []string{aDoc.ID, aImg.ID} {
			_, _, err := svc.Get(b.ctx, id)
			is.True(errors.Is(err, attachments.ErrNotFound)) // B's Get of A's attachment
		}

		// Update, Delete, Transfer: not found, and A's attachment unchanged.
		_, err = svc.Update(b.ctx, aDoc.ID, attachments.Patch{Tags: &[]string{"stolen"}})
		is.True(errors.Is(err, attachments.ErrNotFound))
		is.True(errors.Is(svc.Delete(b.ctx, aDoc.ID), attachments.ErrNotFound))
		n, err := svc.Transfer(b.ctx, attachments.TransferInput{EntityID: "orders", AttachmentIDs: []string{aDoc.ID}, ToRecordID: "R2"})
		is.True(errors.Is(err, store.ErrNotFound))
		is.Equal(n, 0)
		n, err = svc.Transfer(b.ctx, attachments.TransferInput{EntityID: "orders", AttachmentIDs: []string{bDoc.ID, aDoc.ID}, ToRecordID: "R2"})
		is.True(errors.Is(err, store.ErrNotFound)) // one of A's ids among B's: nothing moves
		got, _, err := svc.Get(b.ctx, bDoc.ID)
		is.NoErr(err)
		is.Equal(got.RecordID, "R1") // B's own attachment did not move either
		got, _, err = svc.Get(a.ctx, aDoc.ID)
		is.NoErr(err)
		is.Equal(got.Tags, []string{"legal"})
		is.Equal(got.RecordID, "R1")
		is.Equal(blobBytes(t, blobs, a.id+"/"+aDoc.ID+"/original"), []byte("signed contract"))
		is.Equal(len(events(t, db, a.id, attachments.EventUpdated)), 0) // no event in A's name
		is.Equal(len(events(t, db, a.id, attachments.EventDeleted)), 0)
		is.Equal(len(events(t, db, b.id, attachments.EventCreated)), 1)

		// Lookup: Scoped reads the caller's tenant only, and public files
		// (a credential never gets less than none); Anonymous gets public
		// files of any tenant and one 401 for everything else; AnyTenant
		// (a super admin) gets any tenant's.
		_, err = svc.Lookup(b.ctx, aDoc.ID, attachments.Scoped)
		is.True(errors.Is(err, attachments.ErrNotFound))
		pub, err := svc.Lookup(b.ctx, aImg.ID, attachments.Scoped)
		is.NoErr(err) // public: B may download it, as anyone may
		is.Equal(pub.Attachment.ID, aImg.ID)
		f, err := svc.Lookup(a.ctx, aDoc.ID, attachments.Scoped)
		is.NoErr(err)
		is.Equal(f.Attachment.ID, aDoc.ID)
		is.Equal(f.Partition.Code, "contracts")
		f, err = svc.Lookup(ctx, aImg.ID, attachments.Anonymous)
		is.NoErr(err)
		is.True(f.Partition.IsPublic)
		is.True(svc.IsImage(f))
		for _, id := range []string{aDoc.ID, bDoc.ID, store.NewID(), "not-an-id"} {
			_, err := svc.Lookup(ctx, id, attachments.Anonymous)
			is.True(errors.Is(err, attachments.ErrCredentialRequired)) // private, unknown and malformed ids look alike
		}
		f, err = svc.Lookup(b.ctx, aDoc.ID, attachments.AnyTenant)
		is.NoErr(err)
		is.Equal(f.Attachment.TenantID, a.id)
		is.Equal(f.Partition.Code, "contracts")
		for _, id := range []string{store.NewID(), "not-an-id"} {
			_, err = svc.Lookup(b.ctx, id, attachments.AnyTenant)
			is.True(errors.Is(err, attachments.ErrNotFound))
		}
		r, err := svc.Open(ctx, f)
		is.NoErr(err)
		body, err := io.ReadAll(r)
		is.NoErr(err)
		is.NoErr(r.Close())
		is.Equal(string(body), "signed contract")

		// Image: of A's file, stored under A's prefix, whoever asked.
		img, err := svc.Lookup(ctx, aImg.ID, attachments.Anonymous)
		is.NoErr(err)
		thumb, mime, err := svc.Image(b.ctx, img, 10, 10, "contain")
		is.NoErr(err)
		is.NoErr(thumb.Close())
		is.Equal(mime, "image/png")
		is.True(slices.Contains(blobKeys(t, blobs, a.id+"/"), a.id+"/"+aImg.ID+"/thumbs/10x10-contain"))
		is.Equal(blobKeys(t, blobs, b.id+"/"), []string{b.id + "/" + bDoc.ID + "/original"}) // nothing under B's prefix

		// ExtractContent naming B does nothing to A's attachment.
		is.NoErr(svc.ExtractContent(ctx, b.id, aDoc.ID))
		is.NoErr(svc.ExtractContent(ctx, b.id, aImg.ID))
		is.Equal(content(t, svc, a, aDoc.ID), "<nil>")
		is.Equal(content(t, svc, a, aImg.ID), "<nil>")
		is.Equal(len(ocr.Calls()), 0)
		is.NoErr(svc.ExtractContent(ctx, a.id, aDoc.ID))
		is.Equal(content(t, svc, a, aDoc.ID), "signed contract")

		// A's delete leaves B's files.
		is.NoErr(svc.Delete(a.ctx, aDoc.ID))
		is.Equal(blobKeys(t, blobs, b.id+"/"), []string{b.id + "/" + bDoc.ID + "/original"})
		is.Equal(usage(t, db, b.id), int64(len("b notes")))
	}, attachments.Migrations)
}
