package httpapi

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/httpapi/attachmentsapi"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// FuzzAttachmentUpload sends arbitrary bytes as a multipart upload body
// (the Content-Type names attBoundary) and arbitrary entityId, recordId,
// partitionCode and tags values as extra leading parts, to POST
// /attachments on SQLite with small limits. However malformed the body, the
// answer is never a 5xx and nothing panics (the recovery middleware turns
// panics into 500s, so a panic fails the status check). The seeds, valid
// and broken bodies, run as ordinary tests.
func FuzzAttachmentUpload(f *testing.F) {
	var parts = func(ps ...attPart) []byte { return attMultipart(f, ps...) }
	png := attPNG(f, 4, 4)
	valid := parts(attPart{name: "entityId", data: []byte("crm.deal")}, attPart{name: "recordId", data: []byte("r1")},
		attPart{name: "file", fileName: "a.txt", data: []byte("hello")})
	seeds := []struct {
		body                          []byte
		entity, record, partition, tg string
	}{
		{valid, "", "", "", ""},
		{parts(attPart{name: "file", fileName: "p.png", data: png}), "crm.deal", "r1", "productsMedia", `["a","b"]`},
		{parts(attPart{name: "file", fileName: "a.exe", data: []byte("MZ")}), "crm.deal", "r1", "", ""},
		{parts(attPart{name: "file", fileName: "a.txt", data: []byte("<svg onload=x>")}), "crm.deal", "r1", "", ""},
		{parts(attPart{name: "file", fileName: "big.txt", data: attBytes(5000)}), "crm.deal", "r1", "nope", "[1]"},
		{parts(attPart{name: "customFields", data: []byte(`{"x":1}`)}, attPart{name: "assignments", data: []byte(`[{"type":"a","id":"b"}]`)},
			attPart{name: "file", fileName: "c.txt", data: []byte("c")}), "crm.deal", "r1", "", ""},
		{parts(attPart{name: "fieldKey", data: []byte("scans")}, attPart{name: "file", fileName: "c.txt", data: []byte("c")}), "bad id!", "r1", "", ""},
		{parts(attPart{name: "tenantId", data: []byte("someone else")}, attPart{name: "file", fileName: "c.txt", data: []byte("c")}), "e", "r", "", ""},
		{valid[:len(valid)-10], "", "", "", ""},
		{valid[:40], "", "", "", ""},
		{[]byte{}, "", "", "", ""},
		{[]byte("--" + attBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"q.txt\"\r\n" +
			"Content-Transfer-Encoding: quoted-printable\r\n\r\nbad =ZZ escape\r\n--" + attBoundary + "--\r\n"), "e", "r", "", ""},
		{[]byte("--" + attBoundary + "\r\nContent-Disposition: form-data; name=\"note\"\r\n" +
			"Content-Transfer-Encoding: quoted-printable\r\n\r\n=ZZ\r\n--" + attBoundary + "--\r\n"), "e", "r", "", ""},
		{[]byte("--" + attBoundary + "\r\nno colon here\r\n\r\nx\r\n--" + attBoundary + "--\r\n"), "e", "r", "", ""},
		{[]byte("--" + attBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\xff\xfe.txt\"\r\n\r\nx\r\n--" + attBoundary + "--\r\n"), "e", "r", "", ""},
		{[]byte("--" + attBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\x00.txt\"\r\n\r\nx\r\n--" + attBoundary + "--\r\n"), "e", "r", "", ""},
		{valid, "e\x00", "r\xff", "p\x00", "[\"\x00\"]"},
		{valid, "e", "r", "productsMedia\xff", ""},
	}
	for _, s := range seeds {
		f.Add(s.body, s.entity, s.record, s.partition, s.tg)
	}

	// One environment for every input: opening a Kit per input would
	// make the fuzzer crawl. The limits are small so that large inputs
	// reach the refusals.
	shared := attNewEnv(f, storetest.SQLite(f), attachments.Options{MaxUploadBytes: 4 << 10, TenantQuotaBytes: 1 << 20})
	key := shared.newKey(shared.newTenant("Fuzz"), attachmentsapi.FeatureAttachmentsView, attachmentsapi.FeatureAttachmentsManage)
	f.Fuzz(func(t *testing.T, body []byte, entity, record, partition, tags string) {
		e := shared.with(t)
		// Fields given as arguments go first, as parts of their own.
		var pre []attPart
		for _, p := range []struct{ name, value string }{{"entityId", entity}, {"recordId", record}, {"partitionCode", partition}, {"tags", tags}} {
			if p.value != "" {
				pre = append(pre, attPart{name: p.name, data: []byte(p.value)})
			}
		}
		full := body
		if len(pre) > 0 {
			head := attMultipart(t, pre...)
			// Drop the closing delimiter so that body's parts follow.
			head = bytes.TrimSuffix(head, []byte("--"+attBoundary+"--\r\n"))
			full = append(head, body...)
		}
		r := e.attPostBody(key, full)
		switch r.Status {
		case http.StatusOK, http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for body %q (entity %q, record %q, partition %q, tags %q): %s",
				r.Status, full, entity, record, partition, tags, r.Body)
		}
	})
}
