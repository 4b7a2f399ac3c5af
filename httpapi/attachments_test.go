package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/attachmentsapi"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The attachment routes: partitions, upload and its refusals, a record's
// list, the library, transfer, events, tenants and organizations, text
// extraction. Delivery (file and image routes) is in
// attachments_delivery_test.go, the upload fuzz test in
// attachments_fuzz_test.go. Every test makes its own tenants and entity
// ids, so on PostgreSQL (one schema for the package) nothing another test
// writes shows up.

const attBase = "/api/attachments"

// attBoundary is the multipart boundary of every upload the tests build.
const attBoundary = "tk-attachment-test-boundary-5e1f"

// attNewEnv is newTestEnv over a Kit with the attachments options given.
func attNewEnv(t testing.TB, db *store.DB, opts attachments.Options) *testEnv {
	t.Helper()
	return attNewEnvConfig(t, db, full.Config{Attachments: opts})
}

// attNewEnvConfig is newTestEnv over a Kit opened with cfg (its DB and
// SecretKey are set here).
func attNewEnvConfig(t testing.TB, db *store.DB, cfg full.Config) *testEnv {
	t.Helper()
	return newTestEnvConfig(t, db, cfg)
}

// attAllFeatures are what the fixture's key holds: both attachment
// features and custom field definitions (to declare attachment fields).
var attAllFeatures = []string{attachmentsapi.FeatureAttachmentsView, attachmentsapi.FeatureAttachmentsManage, entitiesapi.FeatureEntitiesDefinitionsManage}

// attFixture is a tenant with a key holding attAllFeatures in its
// organization, and an entity id of the test's own.
type attFixture struct {
	e      *testEnv
	tf     tenantFixture
	key    string
	entity string
}

func attSetup(e *testEnv, name string) *attFixture {
	e.t.Helper()
	tf := e.newTenant(name)
	return &attFixture{e: e, tf: tf, key: e.newKey(tf, attAllFeatures...), entity: entTestID("doc")}
}

// attPart is one part of a multipart body: a field, or a file when
// fileName is set.
type attPart struct {
	name, fileName string
	data           []byte
}

// attMultipart builds a multipart/form-data body (boundary attBoundary).
func attMultipart(t testing.TB, parts ...attPart) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(attBoundary); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		var pw interface{ Write([]byte) (int, error) }
		var err error
		if p.fileName != "" {
			pw, err = w.CreateFormFile(p.name, p.fileName)
		} else {
			pw, err = w.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// attForm is the parts of an upload: the fields (in key order) and, when
// fileName is not "", the file.
func attForm(fields map[string]string, fileName string, data []byte) []attPart {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]attPart, 0, len(fields)+1)
	for _, k := range keys {
		parts = append(parts, attPart{name: k, data: []byte(fields[k])})
	}
	if fileName != "" {
		parts = append(parts, attPart{name: "file", fileName: fileName, data: data})
	}
	return parts
}

// attPostBody posts a multipart body to the upload route with key.
func (e *testEnv) attPostBody(key string, body []byte) *response {
	e.t.Helper()
	return e.send("POST", attBase, body, func(req *http.Request) {
		req.Header.Set("Content-Type", "multipart/form-data; boundary="+attBoundary)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
	})
}

// attUpload posts an upload of fields and a file with key.
func (e *testEnv) attUpload(key string, fields map[string]string, fileName string, data []byte) *response {
	e.t.Helper()
	return e.attPostBody(key, attMultipart(e.t, attForm(fields, fileName, data)...))
}

// fields returns the upload's fields for record rec of the fixture's
// entity, with extra ones (key, value pairs).
func (f *attFixture) fields(rec string, kv ...string) map[string]string {
	m := map[string]string{"entityId": f.entity, "recordId": rec}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// upload uploads a file to record rec with the fixture's key, expects 200
// and returns the item.
func (f *attFixture) upload(rec, fileName string, data []byte, kv ...string) map[string]any {
	f.e.t.Helper()
	body := f.e.attUpload(f.key, f.fields(rec, kv...), fileName, data).expect(200).JSON()
	if body["ok"] != true {
		f.e.t.Fatalf("upload body %v, want ok: true", body)
	}
	return body["item"].(map[string]any)
}

// attIDs returns the ids of items.
func attIDs(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it["id"].(string)
	}
	return out
}

// attList is GET /attachments for a record with key, 200; it returns the
// ids, newest first.
func (e *testEnv) attList(key, entity, rec string) []string {
	e.t.Helper()
	body := e.do("GET", attBase+"?entityId="+url.QueryEscape(entity)+"&recordId="+url.QueryEscape(rec), key, nil).expect(200).JSON()
	expectKeys(e.t, "record list", body, "items")
	return attIDs(entItems(e.t, body))
}

// attLibrary is GET /attachments/library?query with key, 200.
func (e *testEnv) attLibrary(key, query string) map[string]any {
	e.t.Helper()
	body := e.do("GET", attBase+"/library?"+query, key, nil).expect(200).JSON()
	expectKeys(e.t, "library", body, "items", "total", "page", "pageSize", "totalPages", "availableTags", "partitions")
	return body
}

// attPartitions is GET /attachments/partitions with key, 200, by code.
func (e *testEnv) attPartitions(key string) map[string]map[string]any {
	e.t.Helper()
	body := e.do("GET", attBase+"/partitions", key, nil).expect(200).JSON()
	expectKeys(e.t, "partitions", body, "items")
	out := map[string]map[string]any{}
	for _, it := range entItems(e.t, body) {
		code := it["code"].(string)
		if out[code] != nil {
			e.t.Errorf("partition %s listed twice", code)
		}
		out[code] = it
	}
	return out
}

// attInvalid checks a 400 {error: "Validation failed", details} whose
// details name exactly fields.
func attInvalid(t testing.TB, r *response, fields ...string) map[string]any {
	t.Helper()
	if r.Status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 naming %v; body: %s", r.Status, fields, r.Body)
	}
	body := r.JSON()
	details, _ := body["details"].(map[string]any)
	if body["error"] != "Validation failed" || details == nil {
		t.Fatalf("400 body %s, want {error: Validation failed, details}", r.Body)
	}
	expectKeys(t, "400 details", details, fields...)
	return details
}

// attError checks the status and that the body is exactly {error: msg}.
func attError(t testing.TB, r *response, status int, msg string) {
	t.Helper()
	expectBody(t, r, status, map[string]any{"error": msg})
}

// attEvents returns the tenant's attachments.* events, oldest first.
func (e *testEnv) attEvents(tenantID string) []store.Event {
	e.t.Helper()
	return e.events(tenantID, "attachments.")
}

// attBlobCount is how many blobs the Kit's storage holds for a tenant's
// originals (staged files that became nothing must not stay).
func (e *testEnv) attBlobCount(tenantID string) int {
	e.t.Helper()
	list, err := e.kit.Attachments.Blobs().List(e.t.Context(), tenantID+"/")
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, b := range list {
		if strings.HasSuffix(b.Key, "/original") {
			n++
		}
	}
	return n
}

// attPNG is a w×h PNG with a gradient (so that resizes differ from
// padding).
func attPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: uint8(x * 255 / max(w-1, 1)), G: uint8(y * 255 / max(h-1, 1)), B: 128, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// attBytes is n bytes of printable text (sniffed as text/plain).
func attBytes(n int) []byte {
	return bytes.Repeat([]byte("a"), n)
}

// attDefine declares a custom field definition with key (200).
func (e *testEnv) attDefine(key, entityID, field, kind string, config map[string]any) {
	e.t.Helper()
	body := map[string]any{"entityId": entityID, "key": field, "kind": kind}
	if config != nil {
		body["configJson"] = config
	}
	e.do("POST", "/api/entities/definitions", key, body).expect(200)
}

func TestAttachmentPartitions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		base := attBase + "/partitions"

		// The defaults, created on first use, once.
		parts := e.attPartitions(f.key)
		is.Equal(len(parts), 2)
		for code, want := range map[string]map[string]any{
			"productsMedia":      {"isPublic": true, "requiresOcr": true, "envKey": "ATTACHMENTS_PARTITION_PRODUCTS_MEDIA_ROOT"},
			"privateAttachments": {"isPublic": false, "requiresOcr": true, "envKey": "ATTACHMENTS_PARTITION_PRIVATE_ATTACHMENTS_ROOT"},
		} {
			p := parts[code]
			if p == nil {
				t.Fatalf("default partition %s missing: %v", code, parts)
			}
			expectKeys(t, "partition "+code, p, "id", "code", "title", "description", "isPublic", "requiresOcr", "envKey", "createdAt", "updatedAt")
			is.True(store.IsID(p["id"].(string)))
			is.True(p["title"] != "")
			for k, v := range want {
				is.Equal(p[k], v)
			}
			parseTime(t, "createdAt", p["createdAt"])
			parseTime(t, "updatedAt", p["updatedAt"])
		}
		again := e.attPartitions(f.key)
		is.Equal(len(again), 2)
		is.Equal(again["productsMedia"]["id"], parts["productsMedia"]["id"])

		// Create: 201 {item}; defaults for the flags; a taken code is 409.
		r := e.do("POST", base, f.key, map[string]any{"code": "invoices-2024", "title": "Invoices", "description": "Scans"}).expect(201).JSON()
		expectKeys(t, "create body", r, "item")
		inv := r["item"].(map[string]any)
		expectKeys(t, "created partition", inv, "id", "code", "title", "description", "isPublic", "requiresOcr", "envKey", "createdAt", "updatedAt")
		is.Equal(inv["code"], "invoices-2024")
		is.Equal(inv["title"], "Invoices")
		is.Equal(inv["description"], "Scans")
		is.Equal(inv["isPublic"], false)
		is.Equal(inv["requiresOcr"], true)
		is.Equal(inv["envKey"], "ATTACHMENTS_PARTITION_INVOICES_2024_ROOT")
		invID := inv["id"].(string)
		is.Equal(len(e.attPartitions(f.key)), 3)
		attError(t, e.do("POST", base, f.key, map[string]any{"code": "invoices-2024", "title": "Again"}), 409, "Partition code already exists.")
		attError(t, e.do("POST", base, f.key, map[string]any{"code": "productsMedia", "title": "Again"}), 409, "Partition code already exists.")
		pub := e.do("POST", base, f.key, map[string]any{"code": "Media_2", "title": "Media", "isPublic": true, "requiresOcr": false}).expect(201).JSON()["item"].(map[string]any)
		is.Equal(pub["isPublic"], true)
		is.Equal(pub["requiresOcr"], false)
		is.Equal(pub["envKey"], "ATTACHMENTS_PARTITION_MEDIA_2_ROOT")
		e.do("POST", base, f.key, map[string]any{"code": strings.Repeat("x", 60), "title": "Sixty"}).expect(201)

		// Codes are [A-Za-z0-9_-]{1,60}.
		for _, code := range []string{"", "bad code", "a.b", "ärger", "a/b", strings.Repeat("x", 61), "x\x00"} {
			attInvalid(t, e.do("POST", base, f.key, map[string]any{"code": code, "title": "T"}), "code")
		}
		attInvalid(t, e.do("POST", base, f.key, map[string]any{"code": "notitle"}), "title")
		e.do("POST", base, f.key, "{").expect(400)

		// Update: 200 {item}; the code cannot change; unknown id is 404.
		r = e.do("PUT", base, f.key, map[string]any{"id": invID, "code": "invoices-2024", "title": "Invoices 2",
			"description": "", "isPublic": true, "requiresOcr": false}).expect(200).JSON()
		expectKeys(t, "update body", r, "item")
		up := r["item"].(map[string]any)
		is.Equal(up["id"], invID)
		is.Equal(up["title"], "Invoices 2")
		is.Equal(up["isPublic"], true)
		is.Equal(up["requiresOcr"], false)
		is.Equal(e.attPartitions(f.key)["invoices-2024"]["title"], "Invoices 2")
		attError(t, e.do("PUT", base, f.key, map[string]any{"id": invID, "code": "renamed", "title": "X"}), 400, "Partition code cannot be changed.")
		is.True(e.attPartitions(f.key)["renamed"] == nil)
		attError(t, e.do("PUT", base, f.key, map[string]any{"id": store.NewID(), "code": "invoices-2024", "title": "X"}), 404, "Partition not found")
		attInvalid(t, e.do("PUT", base, f.key, map[string]any{"code": "invoices-2024", "title": "X"}), "id")

		// Delete: not a default (400), not unknown (404), not in use (409)
		// until its last attachment is gone.
		attError(t, e.do("DELETE", base+"?id="+parts["productsMedia"]["id"].(string), f.key, nil), 400, "Default partitions cannot be removed.")
		attError(t, e.do("DELETE", base+"?id="+parts["privateAttachments"]["id"].(string), f.key, nil), 400, "Default partitions cannot be removed.")
		attError(t, e.do("DELETE", base+"?id="+store.NewID(), f.key, nil), 404, "Partition not found")
		attError(t, e.do("DELETE", base+"?id=nope", f.key, nil), 404, "Partition not found")
		a1 := f.upload("r1", "one.txt", []byte("one"), "partitionCode", "invoices-2024")
		a2 := f.upload("r1", "two.txt", []byte("two"), "partitionCode", "invoices-2024")
		is.Equal(a1["partitionCode"], "invoices-2024")
		attError(t, e.do("DELETE", base+"?id="+invID, f.key, nil), 409, "Partition is in use and cannot be removed.")
		e.do("DELETE", attBase+"?id="+a1["id"].(string), f.key, nil).expect(200)
		e.do("DELETE", base+"?id="+invID, f.key, nil).expect(409)
		e.do("DELETE", attBase+"/library/"+a2["id"].(string), f.key, nil).expect(200)
		expectBody(t, e.do("DELETE", base+"?id="+invID, f.key, nil), 200, map[string]any{"ok": true})
		is.True(e.attPartitions(f.key)["invoices-2024"] == nil)
		e.do("DELETE", base+"?id="+invID, f.key, nil).expect(404)
		// The code is free again.
		e.do("POST", base, f.key, map[string]any{"code": "invoices-2024", "title": "Invoices"}).expect(201)

		// Partitions need attachments.manage.
		view := e.newKey(f.tf, attachmentsapi.FeatureAttachmentsView)
		for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
			expectForbidden(t, e.do(m, base, view, map[string]any{"code": "x", "title": "x"}), attachmentsapi.FeatureAttachmentsManage)
		}
	})
}

// expectForbidden checks a 403 for a missing feature.
func expectForbidden(t testing.TB, r *response, feature string) {
	t.Helper()
	expectBody(t, r, 403, map[string]any{"error": "Forbidden", "required": []string{feature}, "requiredFeatures": []string{feature}})
}

func TestAttachmentPartitionsLocked(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{PartitionsLocked: true, NoDefaultOCR: true})
		f := attSetup(e, "Locked")
		base := attBase + "/partitions"
		parts := e.attPartitions(f.key)
		is.Equal(len(parts), 2)
		// NoDefaultOCR: the defaults extract nothing.
		is.Equal(parts["productsMedia"]["requiresOcr"], false)
		is.Equal(parts["privateAttachments"]["requiresOcr"], false)
		pid := parts["privateAttachments"]["id"].(string)
		const locked = "Attachment partitions are managed by the environment."
		attError(t, e.do("POST", base, f.key, map[string]any{"code": "new", "title": "New"}), 403, locked)
		attError(t, e.do("PUT", base, f.key, map[string]any{"id": pid, "code": "privateAttachments", "title": "Changed"}), 403, locked)
		attError(t, e.do("DELETE", base+"?id="+pid, f.key, nil), 403, locked)
		attError(t, e.do("DELETE", base+"?id="+store.NewID(), f.key, nil), 403, locked)
		after := e.attPartitions(f.key)
		is.Equal(len(after), 2)
		is.Equal(after["privateAttachments"]["title"], parts["privateAttachments"]["title"])
		// Uploads still work.
		f.upload("r", "a.txt", []byte("hello"))
	})
}

func TestAttachmentUpload(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		other := e.newTenant("Other")
		rec := "rec-1"
		pngData := attPNG(t, 40, 30)

		// The answer.
		r := e.attUpload(f.key, f.fields(rec), "My File.PNG", pngData).expect(200)
		is.Equal(r.Header.Get("Content-Type"), "application/json")
		body := r.JSON()
		expectKeys(t, "upload body", body, "ok", "item")
		is.Equal(body["ok"], true)
		item := body["item"].(map[string]any)
		expectKeys(t, "upload item", item, "id", "url", "fileName", "fileSize", "mimeType", "partitionCode", "thumbnailUrl",
			"content", "extractionStatus", "extractionError", "tags", "assignments", "customFields", "createdAt")
		id := item["id"].(string)
		is.True(store.IsID(id))
		is.Equal(item["url"], "/api/attachments/file/"+id)
		is.Equal(item["thumbnailUrl"], "/api/attachments/image/"+id+"/my-file.png?width=320&height=320")
		is.Equal(item["fileName"], "My File.PNG")
		is.Equal(item["fileSize"], float64(len(pngData)))
		is.Equal(item["mimeType"], "image/png")
		is.Equal(item["partitionCode"], "privateAttachments")
		is.Equal(item["content"], nil)
		sameJSON(t, "tags", item["tags"], []string{})
		sameJSON(t, "assignments", item["assignments"], []any{map[string]any{"type": f.entity, "id": rec}})
		sameJSON(t, "customFields", item["customFields"], map[string]any{})
		created := parseTime(t, "createdAt", item["createdAt"])
		is.True(time.Since(created) < time.Minute)
		is.Equal(e.attList(f.key, f.entity, rec), []string{id})

		// The file may come before the fields.
		first := attMultipart(t, append([]attPart{{name: "file", fileName: "first.txt", data: []byte("first")}}, attForm(f.fields(rec), "", nil)...)...)
		is.Equal(e.attPostBody(f.key, first).expect(200).JSON()["item"].(map[string]any)["fileName"], "first.txt")

		// Required fields, each named.
		attInvalid(t, e.attPostBody(f.key, attMultipart(t)), "entityId", "recordId", "file")
		attInvalid(t, e.attUpload(f.key, nil, "a.txt", []byte("x")), "entityId", "recordId")
		attInvalid(t, e.attUpload(f.key, map[string]string{"entityId": f.entity}, "a.txt", []byte("x")), "recordId")
		attInvalid(t, e.attUpload(f.key, map[string]string{"recordId": rec}, "a.txt", []byte("x")), "entityId")
		attInvalid(t, e.attUpload(f.key, f.fields(rec), "", nil), "file")
		attInvalid(t, e.attUpload(f.key, f.fields("  "), "a.txt", []byte("x")), "recordId")
		// A "file" field without a file name is no file.
		attInvalid(t, e.attPostBody(f.key, attMultipart(t, append(attForm(f.fields(rec), "", nil), attPart{name: "file", data: []byte("x")})...)), "file")
		// Two files.
		two := append(attForm(f.fields(rec), "a.txt", []byte("a")), attPart{name: "file", fileName: "b.txt", data: []byte("b")})
		attInvalid(t, e.attPostBody(f.key, attMultipart(t, two...)), "file")

		// Not multipart.
		for _, ct := range []string{"application/json", "text/plain", "multipart/form-data", "multipart/mixed; boundary=" + attBoundary, ""} {
			r := e.send("POST", attBase, attMultipart(t, attForm(f.fields(rec), "a.txt", []byte("x"))...), func(req *http.Request) {
				req.Header.Set("X-Api-Key", f.key)
				req.Header.Set("Content-Type", ct)
			})
			if r.Status != 400 {
				t.Errorf("Content-Type %q: status %d, want 400; body: %s", ct, r.Status, r.Body)
			}
		}
		e.do("POST", attBase, f.key, map[string]any{"entityId": f.entity, "recordId": rec}).expect(400)
		// A body cut short.
		full := attMultipart(t, attForm(f.fields(rec), "a.txt", []byte("hello there"))...)
		e.attPostBody(f.key, full[:len(full)-20]).expect(400)
		e.attPostBody(f.key, []byte("garbage")).expect(400)

		// Partitions: the private default, a public one named explicitly,
		// an unknown one refused.
		is.Equal(f.upload(rec, "pub.png", pngData, "partitionCode", "productsMedia")["partitionCode"], "productsMedia")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "partitionCode", "nope"), "a.txt", []byte("x")), "partitionCode")

		// Tags, assignments, customFields: JSON, each named when malformed.
		it := f.upload(rec, "tagged.txt", []byte("x"), "tags", `["b", " a ", "b"]`,
			"assignments", `[{"type":"crm.deal","id":"d1","href":"/deals/d1","label":"Deal"},{"type":"`+f.entity+`","id":"`+rec+`"}]`)
		sameJSON(t, "tags", it["tags"], []string{"b", "a"})
		// The record's own link, sent or not, is there once.
		sameJSON(t, "assignments", it["assignments"], []any{
			map[string]any{"type": "crm.deal", "id": "d1", "href": "/deals/d1", "label": "Deal"},
			map[string]any{"type": f.entity, "id": rec},
		})
		it2 := f.upload(rec, "linked.txt", []byte("x"), "assignments", `[{"type":"crm.deal","id":"d2"}]`)
		sameJSON(t, "assignments", it2["assignments"], []any{map[string]any{"type": f.entity, "id": rec}, map[string]any{"type": "crm.deal", "id": "d2"}})
		is.Equal(e.attList(f.key, "crm.deal", "d1"), []string{it["id"].(string)})
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "tags", "not json"), "a.txt", []byte("x")), "tags")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "tags", `[1]`), "a.txt", []byte("x")), "tags")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "tags", `[""]`), "a.txt", []byte("x")), "tags")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "assignments", `{"type":"x"}`), "a.txt", []byte("x")), "assignments")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "assignments", `[{"type":"x"}]`), "a.txt", []byte("x")), "assignments")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "customFields", `[1]`), "a.txt", []byte("x")), "customFields")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "tags", "[", "assignments", "[", "customFields", "{"), "a.txt", []byte("x")),
			"tags", "assignments", "customFields")

		// Custom fields: the definitions of attachments:attachment.
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "customFields", `{"note":"hi"}`), "a.txt", []byte("x")), "cf_note")
		e.attDefine(f.key, attachments.CustomFieldsEntity, "note", "text", nil)
		e.attDefine(f.key, attachments.CustomFieldsEntity, "pages", "integer", nil)
		it = f.upload(rec, "cf.txt", []byte("x"), "customFields", `{"note":"hi","cf_pages":3}`)
		sameJSON(t, "customFields", it["customFields"], map[string]any{"note": "hi", "pages": 3})
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "customFields", `{"bogus":1}`), "a.txt", []byte("x")), "cf_bogus")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "customFields", `{"pages":"many"}`), "a.txt", []byte("x")), "cf_pages")

		// fieldKey: the field's size limit, extensions and partition.
		e.attDefine(f.key, f.entity, "scans", "attachment", map[string]any{
			"maxAttachmentSizeMb": 0.01, "acceptExtensions": []string{"png", ".TXT"}, "partitionCode": "productsMedia"})
		it = f.upload(rec, "small.txt", attBytes(5000), "fieldKey", "scans")
		is.Equal(it["partitionCode"], "productsMedia")
		is.Equal(f.upload(rec, "small.png", pngData, "fieldKey", "cf_scans")["partitionCode"], "productsMedia")
		is.Equal(f.upload(rec, "override.txt", attBytes(10), "fieldKey", "scans", "partitionCode", "privateAttachments")["partitionCode"], "privateAttachments")
		attError(t, e.attUpload(f.key, f.fields(rec, "fieldKey", "scans"), "big.txt", attBytes(20000)), 413, "Attachment exceeds the maximum upload size.")
		attError(t, e.attUpload(f.key, f.fields(rec, "fieldKey", "scans"), "doc.pdf", []byte("%PDF-1.4\n")), 400, "File type not allowed")
		attError(t, e.attUpload(f.key, f.fields(rec, "fieldKey", "scans"), "txt", []byte("x")), 400, "File type not allowed")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "fieldKey", "nope"), "a.txt", []byte("x")), "fieldKey")

		// Scope fields: equal to the caller's, or 403.
		f.upload(rec, "scoped.txt", []byte("x"), "tenantId", f.tf.ID, "organizationId", f.tf.OrgID)
		const mismatch = "tenantId and organizationId must match your scope."
		attError(t, e.attUpload(f.key, f.fields(rec, "tenantId", other.ID), "a.txt", []byte("x")), 403, mismatch)
		attError(t, e.attUpload(f.key, f.fields(rec, "organizationId", other.OrgID), "a.txt", []byte("x")), 403, mismatch)
		attError(t, e.attUpload(f.key, f.fields(rec, "tenantId", f.tf.ID, "organizationId", e.entNewOrg(f.tf.ID, "West")), "a.txt", []byte("x")), 403, mismatch)
		is.Equal(e.attLibrary(attKey(e, other), "")["total"], 0.0)

		// Each field is at most 64 KiB.
		long := `["` + strings.Repeat("t", 64<<10) + `"]`
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "tags", long), "a.txt", []byte("x")), "tags")
		attInvalid(t, e.attUpload(f.key, f.fields(rec, "note", strings.Repeat("n", 64<<10+1)), "a.txt", []byte("x")), "note")

		// Nothing refused was kept: one blob per attachment.
		total := e.attLibrary(f.key, "pageSize=100")["total"].(float64)
		is.Equal(float64(e.attBlobCount(f.tf.ID)), total)
		is.Equal(len(e.attList(f.key, f.entity, rec)), int(total))
	})
}

// attKey returns a key of tf with both attachment features.
func attKey(e *testEnv, tf tenantFixture) string {
	e.t.Helper()
	return e.newKey(tf, attachmentsapi.FeatureAttachmentsView, attachmentsapi.FeatureAttachmentsManage)
}

func TestAttachmentRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		const limit = 64 << 10
		e := attNewEnv(t, db, attachments.Options{MaxUploadBytes: limit})
		f := attSetup(e, "Acme")
		rec := "r"
		kept := 0

		// A body cut short after a whole part (no closing boundary) is
		// malformed, not complete.
		whole := attMultipart(t, attForm(f.fields(rec), "cut.txt", []byte("cut"))...)
		cut := whole[:bytes.LastIndex(whole, []byte("--"+attBoundary))]
		attError(t, e.attPostBody(f.key, cut), 400, "Malformed multipart body")

		// The upload limit: at it is fine, one byte more is 413, and so is
		// a body whose Content-Length is beyond it plus the multipart
		// allowance (refused before reading).
		f.upload(rec, "limit.txt", attBytes(limit))
		kept++
		const tooLarge = "Attachment exceeds the maximum upload size."
		attError(t, e.attUpload(f.key, f.fields(rec), "over.txt", attBytes(limit+1)), 413, tooLarge)
		attError(t, e.attUpload(f.key, f.fields(rec), "way-over.bin", attBytes(3*limit)), 413, tooLarge)
		huge := attMultipart(t, attForm(f.fields(rec), "huge.txt", attBytes(limit+(1<<20)+1))...)
		is.Equal(e.attPostBody(f.key, huge).Status, 413)

		// Executable extensions, in any dot segment, any case.
		const executable = "Executable file types are not allowed as attachments."
		for _, name := range []string{"a.EXE", "b.exe.txt", "c.tar.Sh", "d.Bat", "e.ps1", "f.JS", "g.dll.png", "h.msi", "i.cmd", "report.Jar.zip", "x.txt.exe"} {
			attError(t, e.attUpload(f.key, f.fields(rec), name, []byte("MZ fine")), 400, executable)
		}

		// Active content: by extension, or by what the bytes are.
		const active = "Active content uploads are not allowed."
		for _, name := range []string{"a.html", "b.svg", "c.xml", "d.HTM", "e.xhtml", "f.svg.txt", "g.Html.png"} {
			attError(t, e.attUpload(f.key, f.fields(rec), name, []byte("plain")), 400, active)
		}
		for i, data := range []string{
			`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`,
			"<html><body>hi</body></html>",
			"  \n<!DOCTYPE html><html></html>",
			"\xef\xbb\xbf<SVG onload=alert(1)>",
			`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`,
			"<script>alert(1)</script>",
		} {
			attError(t, e.attUpload(f.key, f.fields(rec), fmt.Sprintf("note%d.txt", i), []byte(data)), 400, active)
		}
		// Markup further in is text.
		f.upload(rec, "mention.txt", []byte("see <svg> and <html> tags"))
		kept++

		// The type is sniffed, never taken from the name.
		pngData := attPNG(t, 8, 8)
		is.Equal(f.upload(rec, "x.bin", pngData)["mimeType"], "image/png")
		is.True(strings.HasPrefix(f.upload(rec, "fake.png", []byte("just text"))["mimeType"].(string), "text/plain"))
		kept += 2

		// Nothing refused was kept.
		is.Equal(e.attLibrary(f.key, "")["total"], float64(kept))
		is.Equal(e.attBlobCount(f.tf.ID), kept)
	})
}

func TestAttachmentQuota(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		const quota = 100_000
		e := attNewEnv(t, db, attachments.Options{TenantQuotaBytes: quota})
		f := attSetup(e, "Acme")
		const over = "Attachment storage quota exceeded for this tenant."

		first := f.upload("r", "a.txt", attBytes(60_000))
		attError(t, e.attUpload(f.key, f.fields("r"), "b.txt", attBytes(60_000)), 413, over)
		f.upload("r", "fits.txt", attBytes(40_000)) // exactly the quota
		attError(t, e.attUpload(f.key, f.fields("r"), "one.txt", []byte("x")), 413, over)
		// A delete gives the bytes back.
		e.do("DELETE", attBase+"?id="+first["id"].(string), f.key, nil).expect(200)
		f.upload("r", "c.txt", attBytes(60_000))
		is.Equal(e.attBlobCount(f.tf.ID), 2)

		// Another tenant has a quota of its own.
		g := attSetup(e, "Other")
		g.upload("r", "a.txt", attBytes(90_000))

		// Concurrent uploads cannot together pass the quota.
		h := attSetup(e, "Busy")
		const n = 8
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				statuses[i] = e.attUpload(h.key, h.fields("r"), fmt.Sprintf("c%d.txt", i), attBytes(quota*4/10)).Status
			})
		}
		wg.Wait()
		ok := 0
		for i, s := range statuses {
			switch s {
			case 200:
				ok++
			case 413:
			default:
				t.Errorf("upload %d: status %d, want 200 or 413", i, s)
			}
		}
		if ok < 1 || ok > 2 {
			t.Errorf("%d of %d concurrent uploads of 40%% of the quota succeeded, want 1 or 2 (statuses %v)", ok, n, statuses)
		}
		lib := e.attLibrary(h.key, "pageSize=100")
		is.Equal(lib["total"], float64(ok))
		var sum float64
		for _, it := range entItems(t, lib) {
			sum += it["fileSize"].(float64)
		}
		if sum > quota {
			t.Errorf("the tenant stores %v bytes, over its quota of %d", sum, quota)
		}
		is.Equal(e.attBlobCount(h.tf.ID), ok)

		// Concurrent deletes of one attachment give its bytes back once.
		k := attSetup(e, "Deletes")
		id := k.upload("r", "a.txt", attBytes(60_000))["id"].(string)
		dels := make([]int, 5)
		for i := range dels {
			wg.Go(func() { dels[i] = e.do("DELETE", attBase+"?id="+id, k.key, nil).Status })
		}
		wg.Wait()
		slices.Sort(dels)
		is.Equal(dels, []int{200, 404, 404, 404, 404})
		k.upload("r", "b.txt", attBytes(60_000))
		attError(t, e.attUpload(k.key, k.fields("r"), "c.txt", attBytes(60_000)), 413, over)
	})
}

func TestAttachmentRecordList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		a := f.upload("r1", "a.txt", []byte("a"))["id"].(string)
		b := f.upload("r1", "b.txt", []byte("b"))["id"].(string)
		c := f.upload("r1", "c.png", attPNG(t, 4, 4), "assignments", `[{"type":"`+f.entity+`","id":"r3"}]`)["id"].(string)
		d := f.upload("r2", "d.txt", []byte("d"))["id"].(string)

		// Newest first; linked records list the attachment too.
		is.Equal(e.attList(f.key, f.entity, "r1"), []string{c, b, a})
		is.Equal(e.attList(f.key, f.entity, "r2"), []string{d})
		is.Equal(e.attList(f.key, f.entity, "r3"), []string{c})
		is.Equal(e.attList(f.key, f.entity, "r4"), []string{})
		is.Equal(e.attList(f.key, entTestID("other"), "r1"), []string{})
		items := entItems(t, e.do("GET", attBase+"?entityId="+f.entity+"&recordId=r2", f.key, nil).expect(200).JSON())
		expectKeys(t, "list item", items[0], "id", "url", "fileName", "fileSize", "mimeType", "partitionCode", "thumbnailUrl",
			"content", "extractionStatus", "extractionError", "tags", "assignments", "customFields", "createdAt")
		attInvalid(t, e.do("GET", attBase+"?entityId="+f.entity, f.key, nil), "recordId")
		attInvalid(t, e.do("GET", attBase+"?recordId=r1", f.key, nil), "entityId")
		attInvalid(t, e.do("GET", attBase, f.key, nil), "entityId", "recordId")

		// Delete: 200 {ok}; then 404, gone from lists, and its file 404s.
		e.do("GET", attBase+"/file/"+b, f.key, nil).expect(200)
		expectBody(t, e.do("DELETE", attBase+"?id="+b, f.key, nil), 200, map[string]any{"ok": true})
		is.Equal(e.attList(f.key, f.entity, "r1"), []string{c, a})
		attError(t, e.do("DELETE", attBase+"?id="+b, f.key, nil), 404, "Attachment not found")
		attError(t, e.do("DELETE", attBase+"?id="+store.NewID(), f.key, nil), 404, "Attachment not found")
		e.do("DELETE", attBase+"?id=not-an-id", f.key, nil).expect(404)
		attInvalid(t, e.do("DELETE", attBase, f.key, nil), "id")               // no id: 400 naming it
		attInvalid(t, e.do("DELETE", attBase+"/partitions", f.key, nil), "id") // the same for partitions
		e.do("GET", attBase+"/file/"+b, f.key, nil).expect(404)
		e.do("GET", attBase+"/library/"+b, f.key, nil).expect(404)
		e.do("DELETE", attBase+"?id="+c, f.key, nil).expect(200)
		e.do("GET", attBase+"/image/"+c+"?width=2", f.key, nil).expect(404)
		is.Equal(e.attList(f.key, f.entity, "r3"), []string{})
		is.Equal(e.attBlobCount(f.tf.ID), 2)
	})
}

func TestAttachmentLibrary(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		e.attDefine(f.key, attachments.CustomFieldsEntity, "note", "text", nil)

		// Five files: names, sizes, tags and partitions to filter and sort by.
		type file struct {
			name      string
			size      int
			tags      string
			partition string
		}
		files := []file{
			{"ärger.txt", 30, `["red","blue"]`, ""},
			{"Alpha.txt", 10, `["red"]`, ""},
			{"beta.txt", 50, `["blue"]`, "productsMedia"},
			{"gamma.txt", 20, `[]`, "productsMedia"},
			{"delta 100%.txt", 40, `["red","blue","green"]`, ""},
		}
		ids := map[string]string{}
		var newest []string // newest first
		for _, fl := range files {
			kv := []string{"tags", fl.tags}
			if fl.partition != "" {
				kv = append(kv, "partitionCode", fl.partition)
			}
			id := f.upload("r", fl.name, attBytes(fl.size), kv...)["id"].(string)
			ids[fl.name] = id
			newest = append([]string{id}, newest...)
		}
		names := func(body map[string]any) []any { return entField(t, entItems(t, body), "fileName") }

		// Defaults: page 1 of 25, newest first, every tag, the partitions.
		lib := e.attLibrary(f.key, "")
		is.Equal(attIDs(entItems(t, lib)), newest)
		is.Equal(lib["total"], 5.0)
		is.Equal(lib["page"], 1.0)
		is.Equal(lib["pageSize"], 25.0)
		is.Equal(lib["totalPages"], 1.0)
		sameJSON(t, "availableTags", lib["availableTags"], []string{"blue", "green", "red"})
		is.Equal(attSorted(entField(t, entItems(t, map[string]any{"items": lib["partitions"]}), "code")), []string{"privateAttachments", "productsMedia"})
		expectKeys(t, "library item", entItems(t, lib)[0], "id", "url", "fileName", "fileSize", "mimeType", "partitionCode",
			"thumbnailUrl", "content", "extractionStatus", "extractionError", "tags", "assignments", "customFields", "createdAt")

		// Pages.
		lib = e.attLibrary(f.key, "page=2&pageSize=2")
		is.Equal(attIDs(entItems(t, lib)), newest[2:4])
		is.Equal(lib["total"], 5.0)
		is.Equal(lib["page"], 2.0)
		is.Equal(lib["pageSize"], 2.0)
		is.Equal(lib["totalPages"], 3.0)
		is.Equal(attIDs(entItems(t, e.attLibrary(f.key, "page=3&pageSize=2"))), newest[4:])
		is.Equal(len(entItems(t, e.attLibrary(f.key, "page=9&pageSize=2"))), 0)
		is.Equal(e.attLibrary(f.key, "pageSize=100")["pageSize"], 100.0)
		attInvalid(t, e.do("GET", attBase+"/library?pageSize=101", f.key, nil), "pageSize")
		attInvalid(t, e.do("GET", attBase+"/library?pageSize=0", f.key, nil), "pageSize")
		attInvalid(t, e.do("GET", attBase+"/library?page=0", f.key, nil), "page")
		attInvalid(t, e.do("GET", attBase+"/library?page=abc", f.key, nil), "page")
		attInvalid(t, e.do("GET", attBase+"/library?sortField=mimeType", f.key, nil), "sortField")
		attInvalid(t, e.do("GET", attBase+"/library?sortDir=up", f.key, nil), "sortDir")
		e.do("GET", attBase+"/library?search=%ff", f.key, nil).expect(400)
		// A page whose offset would overflow (SQLite would read a negative
		// OFFSET as 0 and answer the first page).
		for _, q := range []string{"page=9223372036854775807&pageSize=100", "page=92233720368547760&pageSize=100", "page=99999999999999999999"} {
			attInvalid(t, e.do("GET", attBase+"/library?"+q, f.key, nil), "page")
		}
		is.Equal(len(entItems(t, e.attLibrary(f.key, "page=92233720368547759&pageSize=100"))), 0) // the last page that fits

		// Search: a case-insensitive substring of the name, non-ASCII too;
		// LIKE's wildcards are literal.
		is.Equal(names(e.attLibrary(f.key, "search="+url.QueryEscape("ÄRGER"))), []any{"ärger.txt"})
		is.Equal(names(e.attLibrary(f.key, "search=ALPHA")), []any{"Alpha.txt"})
		is.Equal(names(e.attLibrary(f.key, "search=ta&sortField=fileName&sortDir=asc")), []any{"beta.txt", "delta 100%.txt"})
		is.Equal(names(e.attLibrary(f.key, "search=%25")), []any{"delta 100%.txt"})
		is.Equal(names(e.attLibrary(f.key, "search=_")), []any{})
		is.Equal(e.attLibrary(f.key, "search=zzz")["total"], 0.0)
		// A search's total is capped (here at 3) and says so; below the
		// cap and without a search the total is exact, without the field.
		checkCapped(t, "library search, capped", e.getCapped(attBase+"/library?search=txt", f.key, 3), 3, true)
		checkCapped(t, "library search, exact", e.getCapped(attBase+"/library?search=txt", f.key, 5), 5, false)
		checkCapped(t, "library, no search", e.getCapped(attBase+"/library", f.key, 3), 5, false)

		// Partition and tags (all must match).
		is.Equal(names(e.attLibrary(f.key, "partition=productsMedia&sortField=fileName&sortDir=asc")), []any{"beta.txt", "gamma.txt"})
		is.Equal(e.attLibrary(f.key, "partition=privateAttachments")["total"], 3.0)
		is.Equal(e.attLibrary(f.key, "partition=nope")["total"], 0.0)
		is.Equal(attSorted(names(e.attLibrary(f.key, "tags=red,blue"))), []string{"delta 100%.txt", "ärger.txt"})
		is.Equal(names(e.attLibrary(f.key, "tags="+url.QueryEscape(" green , red "))), []any{"delta 100%.txt"})
		is.Equal(e.attLibrary(f.key, "tags=red,nope")["total"], 0.0)
		is.Equal(names(e.attLibrary(f.key, "tags=blue&partition=productsMedia")), []any{"beta.txt"})
		// Filters leave availableTags whole.
		sameJSON(t, "availableTags", e.attLibrary(f.key, "tags=green")["availableTags"], []string{"blue", "green", "red"})

		// Sorts.
		is.Equal(names(e.attLibrary(f.key, "sortField=fileSize&sortDir=asc")), []any{"Alpha.txt", "gamma.txt", "ärger.txt", "delta 100%.txt", "beta.txt"})
		is.Equal(names(e.attLibrary(f.key, "sortField=fileSize")), []any{"beta.txt", "delta 100%.txt", "ärger.txt", "gamma.txt", "Alpha.txt"})
		is.Equal(attIDs(entItems(t, e.attLibrary(f.key, "sortField=createdAt&sortDir=asc"))), []string{newest[4], newest[3], newest[2], newest[1], newest[0]})
		is.Equal(attIDs(entItems(t, e.attLibrary(f.key, "sortDir=desc"))), newest)
		byName := names(e.attLibrary(f.key, "sortField=fileName&sortDir=asc"))
		is.Equal(len(byName), 5)
		is.Equal(byName[0], "Alpha.txt") // first whatever the engine's collation

		// One attachment: its partition's title and custom fields.
		beta := ids["beta.txt"]
		got := e.do("GET", attBase+"/library/"+beta, f.key, nil).expect(200).JSON()
		expectKeys(t, "get body", got, "item")
		item := got["item"].(map[string]any)
		expectKeys(t, "get item", item, "id", "url", "fileName", "fileSize", "mimeType", "partitionCode", "partitionTitle",
			"thumbnailUrl", "content", "extractionStatus", "extractionError", "tags", "assignments", "customFields", "createdAt")
		is.Equal(item["id"], beta)
		is.Equal(item["partitionTitle"], "Products media")
		is.Equal(item["partitionCode"], "productsMedia")
		sameJSON(t, "customFields", item["customFields"], map[string]any{})
		is.Equal(e.do("GET", attBase+"/library/"+ids["Alpha.txt"], f.key, nil).expect(200).JSON()["item"].(map[string]any)["partitionTitle"], "Private attachments")
		attError(t, e.do("GET", attBase+"/library/"+store.NewID(), f.key, nil), 404, "Attachment not found")
		e.do("GET", attBase+"/library/nope", f.key, nil).expect(404)

		// Patch: tags, assignments, custom fields; the record's own link
		// stays.
		r := e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"tags": []string{"new", "new", " x "},
			"assignments": []map[string]string{{"type": "crm.deal", "id": "d1", "label": "Deal"}}, "customFields": map[string]any{"note": "n1"}}).expect(200).JSON()
		expectKeys(t, "patch body", r, "ok", "item")
		is.Equal(r["ok"], true)
		sameJSON(t, "patched", r["item"], map[string]any{"id": beta, "tags": []string{"new", "x"},
			"assignments":  []any{map[string]any{"type": f.entity, "id": "r"}, map[string]any{"type": "crm.deal", "id": "d1", "label": "Deal"}},
			"customFields": map[string]any{"note": "n1"}})
		is.Equal(e.attList(f.key, "crm.deal", "d1"), []string{beta})
		is.True(slices.Contains(e.attList(f.key, f.entity, "r"), beta))
		sameJSON(t, "availableTags", e.attLibrary(f.key, "")["availableTags"], []string{"blue", "green", "new", "red", "x"})
		// A cf_ key at the top level; other fields stay.
		r = e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"cf_note": "n2"}).expect(200).JSON()
		sameJSON(t, "patched", r["item"].(map[string]any)["customFields"], map[string]any{"note": "n2"})
		sameJSON(t, "tags kept", r["item"].(map[string]any)["tags"], []string{"new", "x"})
		// Null clears; an empty assignments list keeps the record's link.
		r = e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"customFields": map[string]any{"note": nil}, "assignments": []any{}, "tags": []string{}}).expect(200).JSON()
		sameJSON(t, "cleared", r["item"], map[string]any{"id": beta, "tags": []string{},
			"assignments": []any{map[string]any{"type": f.entity, "id": "r"}}, "customFields": map[string]any{}})
		is.Equal(e.attList(f.key, "crm.deal", "d1"), []string{})
		item = e.do("GET", attBase+"/library/"+beta, f.key, nil).expect(200).JSON()["item"].(map[string]any)
		sameJSON(t, "stored", []any{item["tags"], item["customFields"]}, []any{[]string{}, map[string]any{}})
		// Refusals name the field.
		attInvalid(t, e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"customFields": map[string]any{"bogus": 1}}), "cf_bogus")
		attInvalid(t, e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"cf_bogus": 1}), "cf_bogus")
		attInvalid(t, e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"tags": "red"}), "tags")
		attInvalid(t, e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"tags": []string{""}}), "tags")
		attInvalid(t, e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"assignments": []map[string]string{{"type": "x"}}}), "assignments")
		attInvalid(t, e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"customFields": []int{1}}), "customFields")
		e.do("PATCH", attBase+"/library/"+beta, f.key, "[1]").expect(400)
		e.do("PATCH", attBase+"/library/"+beta, f.key, "{").expect(400)
		attError(t, e.do("PATCH", attBase+"/library/"+store.NewID(), f.key, map[string]any{"tags": []string{"a"}}), 404, "Attachment not found")

		// Delete.
		expectBody(t, e.do("DELETE", attBase+"/library/"+beta, f.key, nil), 200, map[string]any{"ok": true})
		e.do("GET", attBase+"/library/"+beta, f.key, nil).expect(404)
		e.do("DELETE", attBase+"/library/"+beta, f.key, nil).expect(404)
		e.do("PATCH", attBase+"/library/"+beta, f.key, map[string]any{"tags": []string{"a"}}).expect(404)
		is.Equal(e.attLibrary(f.key, "")["total"], 4.0)
		is.Equal(e.attLibrary(f.key, "partition=productsMedia")["total"], 1.0)
	})
}

func TestAttachmentTransfer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		g := attSetup(e, "Other")
		tr := attBase + "/transfer"
		a := f.upload("from", "a.txt", []byte("a"))["id"].(string)
		b := f.upload("from", "b.txt", []byte("b"), "assignments", `[{"type":"crm.deal","id":"d1"}]`)["id"].(string)
		c := f.upload("stay", "c.txt", []byte("c"))["id"].(string)
		otherEntity := entTestID("other")
		x := e.attUpload(f.key, map[string]string{"entityId": otherEntity, "recordId": "from"}, "x.txt", []byte("x")).expect(200).JSON()["item"].(map[string]any)["id"].(string)
		foreign := g.upload("from", "g.txt", []byte("g"))["id"].(string)

		// Bad payloads.
		attInvalid(t, e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{}, "toRecordId": "to"}), "attachmentIds")
		attInvalid(t, e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "toRecordId": "to"}), "attachmentIds")
		attInvalid(t, e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{a}}), "toRecordId")
		attInvalid(t, e.do("POST", tr, f.key, map[string]any{"attachmentIds": []string{a}, "toRecordId": "to"}), "entityId")
		attInvalid(t, e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{"nope"}, "toRecordId": "to"}), "attachmentIds")
		e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": "a", "toRecordId": "to"}).expect(400)
		e.do("POST", tr, f.key, "{").expect(400)

		// Any id unknown, another tenant's or of another entity: 404, and
		// nothing moved (the first, valid id included).
		for _, bad := range []string{store.NewID(), foreign, x} {
			r := e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{a, bad}, "fromRecordId": "from", "toRecordId": "to"})
			if r.Status != 404 {
				t.Fatalf("transfer with %s: status %d, want 404; body %s", bad, r.Status, r.Body)
			}
			is.Equal(e.attList(f.key, f.entity, "to"), []string{})
			is.Equal(e.attList(f.key, f.entity, "from"), []string{b, a})
		}
		is.Equal(g.e.attList(g.key, g.entity, "from"), []string{foreign})
		is.Equal(e.attList(f.key, otherEntity, "from"), []string{x})

		// Move two: the destination lists them, the source does not.
		r := e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{a, b, a}, "fromRecordId": "from", "toRecordId": "to"}).expect(200).JSON()
		sameJSON(t, "transfer body", r, map[string]any{"ok": true, "updated": 2})
		is.Equal(e.attList(f.key, f.entity, "to"), []string{b, a})
		is.Equal(e.attList(f.key, f.entity, "from"), []string{})
		is.Equal(e.attList(f.key, "crm.deal", "d1"), []string{b}) // other links stay
		item := e.do("GET", attBase+"/library/"+b, f.key, nil).expect(200).JSON()["item"].(map[string]any)
		sameJSON(t, "assignments", item["assignments"], []any{map[string]any{"type": f.entity, "id": "to"}, map[string]any{"type": "crm.deal", "id": "d1"}})
		// Nothing more to move from "from".
		sameJSON(t, "again", e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{a}, "fromRecordId": "from", "toRecordId": "to"}).expect(200).JSON(),
			map[string]any{"ok": true, "updated": 0})
		// Without fromRecordId each attachment's own record moves.
		sameJSON(t, "own record", e.do("POST", tr, f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{a, c}, "toRecordId": "last"}).expect(200).JSON(),
			map[string]any{"ok": true, "updated": 2})
		is.Equal(e.attList(f.key, f.entity, "last"), []string{c, a})
		is.Equal(e.attList(f.key, f.entity, "stay"), []string{})
		is.Equal(e.attList(f.key, f.entity, "to"), []string{b})
		e.do("GET", attBase+"/file/"+a, f.key, nil).expect(200)
	})
}

func TestAttachmentEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		id := f.upload("r1", "a.txt", []byte("hello"), "tags", `["t"]`)["id"].(string)
		e.do("PATCH", attBase+"/library/"+id, f.key, map[string]any{"tags": []string{"u"}}).expect(200)
		e.do("POST", attBase+"/transfer", f.key, map[string]any{"entityId": f.entity, "attachmentIds": []string{id}, "toRecordId": "r2"}).expect(200)
		// Refusals emit nothing.
		e.attUpload(f.key, f.fields("r1"), "a.exe", []byte("x")).expect(400)
		e.do("PATCH", attBase+"/library/"+id, f.key, map[string]any{"tags": "x"}).expect(400)
		e.do("DELETE", attBase+"?id="+id, f.key, nil).expect(200)

		evs := e.attEvents(f.tf.ID)
		types := make([]string, len(evs))
		for i, ev := range evs {
			types[i] = ev.Type
		}
		is.Equal(types, []string{attachments.EventCreated, attachments.EventUpdated, attachments.EventUpdated, attachments.EventDeleted})
		records := []string{"r1", "r1", "r2", "r2"}
		for i, ev := range evs {
			var data map[string]any
			is.NoErr(json.Unmarshal(ev.Data, &data))
			sameJSON(t, ev.Type, data, map[string]any{"id": id, "tenantId": f.tf.ID, "organizationId": f.tf.OrgID, "entityId": f.entity,
				"recordId": records[i], "fileName": "a.txt", "fileSize": 5, "mimeType": data["mimeType"], "partitionCode": "privateAttachments"})
			is.True(strings.HasPrefix(data["mimeType"].(string), "text/plain"))
			is.Equal(ev.OrganizationID, f.tf.OrgID)
		}
		// The catalogue lists them.
		var catalogue []string
		for _, et := range e.kit.EventTypes() {
			if strings.HasPrefix(et.ID, "attachments.") {
				catalogue = append(catalogue, et.ID)
			}
		}
		is.Equal(catalogue, []string{attachments.EventCreated, attachments.EventUpdated, attachments.EventDeleted, attachments.EventExtractionFinished})
	})
}

// attSorted returns the strings of list, sorted (for orders that depend on
// the engine's collation).
func attSorted(list []any) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i], _ = x.(string)
	}
	slices.Sort(out)
	return out
}

// attNotFound checks a 404.
func attNotFound(t testing.TB, what string, r *response) {
	t.Helper()
	if r.Status != 404 {
		t.Errorf("%s: status %d, want 404; body: %s", what, r.Status, r.Body)
	}
}

// attBlind checks that key neither sees nor changes attachment id (of
// entity, on record rec, tagged tag) on any route, nor partition pid when
// given; a public file it may only download.
func attBlind(t *testing.T, e *testEnv, key, entity, rec, id, tag, pid string, public bool) {
	t.Helper()
	if ids := e.attList(key, entity, rec); slices.Contains(ids, id) {
		t.Errorf("the record list shows %s", id)
	}
	lib := e.attLibrary(key, "pageSize=100")
	if slices.Contains(attIDs(entItems(t, lib)), id) {
		t.Errorf("the library shows %s", id)
	}
	if slices.Contains(lib["availableTags"].([]any), any(tag)) {
		t.Errorf("the library's availableTags show %q: %v", tag, lib["availableTags"])
	}
	if e.attLibrary(key, "tags="+tag)["total"] != 0.0 {
		t.Errorf("the library filters to %s", id)
	}
	attNotFound(t, "GET library/{id}", e.do("GET", attBase+"/library/"+id, key, nil))
	attNotFound(t, "PATCH library/{id}", e.do("PATCH", attBase+"/library/"+id, key, map[string]any{"tags": []string{"stolen"}}))
	attNotFound(t, "DELETE library/{id}", e.do("DELETE", attBase+"/library/"+id, key, nil))
	attNotFound(t, "DELETE ?id", e.do("DELETE", attBase+"?id="+id, key, nil))
	attNotFound(t, "transfer", e.do("POST", attBase+"/transfer", key, map[string]any{"entityId": entity, "attachmentIds": []string{id}, "toRecordId": "stolen"}))
	attNotFound(t, "transfer from", e.do("POST", attBase+"/transfer", key, map[string]any{"entityId": entity, "attachmentIds": []string{id}, "fromRecordId": rec, "toRecordId": "stolen"}))
	if public {
		// A file of a public partition is served to every caller (a
		// credential never gets less than none), and only the file.
		for _, path := range []string{"/file/" + id, "/image/" + id, "/image/" + id + "/a.png?width=10&height=10"} {
			e.do("GET", attBase+path, key, nil).expect(200)
		}
	} else {
		attNotFound(t, "file", e.do("GET", attBase+"/file/"+id, key, nil))
		attNotFound(t, "file download", e.do("GET", attBase+"/file/"+id+"?download=1", key, nil))
		attNotFound(t, "image", e.do("GET", attBase+"/image/"+id, key, nil))
		attNotFound(t, "image resized", e.do("GET", attBase+"/image/"+id+"/a.png?width=10&height=10", key, nil))
	}
	if pid != "" {
		attNotFound(t, "PUT partition", e.do("PUT", attBase+"/partitions", key, map[string]any{"id": pid, "code": "shared", "title": "Stolen"}))
		attNotFound(t, "DELETE partition", e.do("DELETE", attBase+"/partitions?id="+pid, key, nil))
	}
}

func TestAttachmentTenants(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		a := attSetup(e, "Acme")
		b := attSetup(e, "Globex")
		b.entity = a.entity // the same entity and record ids in both
		pngData := attPNG(t, 20, 20)

		shared := e.do("POST", attBase+"/partitions", a.key, map[string]any{"code": "shared", "title": "A's"}).expect(201).JSON()["item"].(map[string]any)
		aDefaults := e.attPartitions(a.key)
		aPriv := a.upload("rec", "a.png", pngData, "tags", `["a-secret"]`)["id"].(string)
		aPub := a.upload("rec", "p.png", pngData, "tags", `["a-secret"]`, "partitionCode", "productsMedia")["id"].(string)
		aShared := a.upload("rec", "s.txt", []byte("s"), "partitionCode", "shared")["id"].(string)
		bOwn := b.upload("rec", "b.txt", []byte("b"), "tags", `["b-tag"]`)["id"].(string)

		// B's partitions are its own: its defaults (other ids), not A's.
		bParts := e.attPartitions(b.key)
		is.Equal(len(bParts), 2)
		is.True(bParts["shared"] == nil)
		is.True(bParts["privateAttachments"]["id"] != aDefaults["privateAttachments"]["id"])
		attInvalid(t, e.attUpload(b.key, b.fields("rec", "partitionCode", "shared"), "x.txt", []byte("x")), "partitionCode")
		attError(t, e.attUpload(b.key, b.fields("rec", "tenantId", a.tf.ID), "x.txt", []byte("x")), 403, "tenantId and organizationId must match your scope.")
		attError(t, e.attUpload(b.key, b.fields("rec", "organizationId", a.tf.OrgID), "x.txt", []byte("x")), 403, "tenantId and organizationId must match your scope.")
		attError(t, e.do("DELETE", attBase+"/partitions?id="+aDefaults["productsMedia"]["id"].(string), b.key, nil), 404, "Partition not found")

		for _, id := range []string{aPriv, aPub, aShared} {
			attBlind(t, e, b.key, a.entity, "rec", id, "a-secret", shared["id"].(string), id == aPub)
		}
		// B's lists hold exactly its own.
		is.Equal(e.attList(b.key, a.entity, "rec"), []string{bOwn})
		lib := e.attLibrary(b.key, "")
		is.Equal(attIDs(entItems(t, lib)), []string{bOwn})
		sameJSON(t, "B's tags", lib["availableTags"], []string{"b-tag"})
		is.Equal(len(lib["partitions"].([]any)), 2)
		// A transfer mixing B's own id and A's moves nothing.
		attNotFound(t, "mixed transfer", e.do("POST", attBase+"/transfer", b.key, map[string]any{"entityId": a.entity, "attachmentIds": []string{bOwn, aPriv}, "toRecordId": "x"}))
		is.Equal(e.attList(b.key, a.entity, "rec"), []string{bOwn})
		// B may use the code A uses, and delete its own (unused) one while
		// A's stays in use.
		bShared := e.do("POST", attBase+"/partitions", b.key, map[string]any{"code": "shared", "title": "B's"}).expect(201).JSON()["item"].(map[string]any)
		e.do("DELETE", attBase+"/partitions?id="+bShared["id"].(string), b.key, nil).expect(200)
		e.do("DELETE", attBase+"/partitions?id="+shared["id"].(string), a.key, nil).expect(409)
		e.do("POST", attBase+"/partitions", b.key, map[string]any{"code": "shared", "title": "B's"}).expect(201)

		// A's side is untouched.
		is.Equal(e.attList(a.key, a.entity, "rec"), []string{aShared, aPub, aPriv})
		lib = e.attLibrary(a.key, "")
		is.Equal(lib["total"], 3.0)
		sameJSON(t, "A's tags", lib["availableTags"], []string{"a-secret"})
		is.Equal(e.attPartitions(a.key)["shared"]["title"], "A's")
		for _, id := range []string{aPriv, aPub, aShared} {
			e.do("GET", attBase+"/file/"+id, a.key, nil).expect(200)
			item := e.do("GET", attBase+"/library/"+id, a.key, nil).expect(200).JSON()["item"].(map[string]any)
			sameJSON(t, "A's assignments", item["assignments"], []any{map[string]any{"type": a.entity, "id": "rec"}})
		}
		// A's public file is public, but still not B's to change.
		e.do("GET", attBase+"/file/"+aPub, "", nil).expect(200)
		is.Equal(len(e.attEvents(b.tf.ID)), 1)
		is.Equal(len(e.attEvents(a.tf.ID)), 3)
	})
}

func TestAttachmentOrganizations(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		tf := e.newTenant("Acme")
		o1, o2 := tf.OrgID, e.entNewOrg(tf.ID, "Acme West")
		feats := []string{attachmentsapi.FeatureAttachmentsView, attachmentsapi.FeatureAttachmentsManage}
		// Keys whose roles read only their organization, and a tenant-wide
		// one acting in none.
		k1 := e.specKey(tf.ID, o1, []string{o1}, feats...)
		k2 := e.specKey(tf.ID, o2, []string{o2}, feats...)
		kT := e.specKey(tf.ID, "", nil, feats...)
		entity := entTestID("doc")
		up := func(key, name, tag string) string {
			t.Helper()
			return e.attUpload(key, map[string]string{"entityId": entity, "recordId": "rec", "tags": `["` + tag + `"]`}, name, attPNG(t, 8, 8)).
				expect(200).JSON()["item"].(map[string]any)["id"].(string)
		}
		id2 := up(k2, "two.png", "org2-tag")
		id1 := up(k1, "one.png", "org1-tag")
		idT := up(kT, "tenant.png", "tenant-tag") // of no organization: everyone's

		attBlind(t, e, k1, entity, "rec", id2, "org2-tag", "", false)
		attBlind(t, e, k2, entity, "rec", id1, "org1-tag", "", false)
		is.Equal(e.attList(k1, entity, "rec"), []string{idT, id1})
		is.Equal(e.attList(k2, entity, "rec"), []string{idT, id2})
		is.Equal(e.attList(kT, entity, "rec"), []string{idT, id1, id2})
		sameJSON(t, "org1's tags", e.attLibrary(k1, "")["availableTags"], []string{"org1-tag", "tenant-tag"})
		// A transfer naming the other organization's id moves nothing.
		attNotFound(t, "mixed transfer", e.do("POST", attBase+"/transfer", k1, map[string]any{"entityId": entity, "attachmentIds": []string{id1, id2}, "toRecordId": "x"}))
		is.Equal(e.attList(kT, entity, "x"), []string{})
		// Everything is still there for the tenant-wide key.
		for _, id := range []string{id1, id2, idT} {
			e.do("GET", attBase+"/file/"+id, kT, nil).expect(200)
			e.do("GET", attBase+"/library/"+id, kT, nil).expect(200)
		}
		// Each upload carries its key's organization.
		evs := e.attEvents(tf.ID)
		is.Equal(len(evs), 3)
		is.Equal(evs[0].OrganizationID, o2)
		is.Equal(evs[1].OrganizationID, o1)
		is.Equal(evs[2].OrganizationID, "")
	})
}

func TestAttachmentFeatures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		id := f.upload("r", "a.png", attPNG(t, 8, 8))["id"].(string)
		view := e.newKey(f.tf, attachmentsapi.FeatureAttachmentsView)
		manage := e.newKey(f.tf, attachmentsapi.FeatureAttachmentsManage)
		none := e.newKey(f.tf)

		// Reads need attachments.view, changes attachments.manage.
		e.do("GET", attBase+"?entityId="+f.entity+"&recordId=r", view, nil).expect(200)
		e.do("GET", attBase+"/library", view, nil).expect(200)
		e.do("GET", attBase+"/library/"+id, view, nil).expect(200)
		e.do("GET", attBase+"/file/"+id, view, nil).expect(200)
		e.do("GET", attBase+"/image/"+id+"?width=4", view, nil).expect(200)
		for _, r := range []*response{
			e.attUpload(view, f.fields("r"), "b.txt", []byte("b")),
			e.do("PATCH", attBase+"/library/"+id, view, map[string]any{"tags": []string{"x"}}),
			e.do("DELETE", attBase+"/library/"+id, view, nil),
			e.do("DELETE", attBase+"?id="+id, view, nil),
			e.do("POST", attBase+"/transfer", view, map[string]any{"entityId": f.entity, "attachmentIds": []string{id}, "toRecordId": "x"}),
		} {
			expectForbidden(t, r, attachmentsapi.FeatureAttachmentsManage)
		}
		for _, r := range []*response{
			e.do("GET", attBase+"?entityId="+f.entity+"&recordId=r", manage, nil),
			e.do("GET", attBase+"/library", manage, nil),
			e.do("GET", attBase+"/library/"+id, manage, nil),
			e.do("GET", attBase+"/file/"+id, manage, nil),
			e.do("GET", attBase+"/image/"+id, manage, nil),
			e.do("GET", attBase+"/image/"+id+"/a.png", none, nil),
		} {
			expectForbidden(t, r, attachmentsapi.FeatureAttachmentsView)
		}
		e.attUpload(manage, f.fields("r"), "b.txt", []byte("b")).expect(200)
		// Anonymous callers get 401 everywhere but on the delivery routes'
		// public files.
		for _, r := range []*response{
			e.do("GET", attBase+"/library", "", nil),
			e.do("GET", attBase+"/partitions", "", nil),
			e.attUpload("", f.fields("r"), "b.txt", []byte("b")),
			e.do("POST", attBase+"/transfer", "", map[string]any{}),
		} {
			r.expect(401)
		}
		e.do("GET", attBase+"/library", "tk_"+randomHex(24), nil).expect(401)
	})
}

func TestAttachmentExtraction(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		e.start()
		f := attSetup(e, "Acme")
		e.do("POST", attBase+"/partitions", f.key, map[string]any{"code": "noocr", "title": "No OCR", "requiresOcr": false}).expect(201)

		// The upload answers first; content comes later.
		skipped := f.upload("r", "skip.txt", []byte("not read"), "partitionCode", "noocr")
		text := f.upload("r", "note.txt", []byte("\n\n  Hello, attachments — ünïcode  \n\t"))
		is.Equal(text["content"], nil)
		img := f.upload("r", "pic.png", attPNG(t, 8, 8))
		id := text["id"].(string)
		get := func(id string) map[string]any {
			return e.do("GET", attBase+"/library/"+id, f.key, nil).expect(200).JSON()["item"].(map[string]any)
		}
		deadline := time.Now().Add(10 * time.Second)
		for get(id)["content"] == nil {
			if time.Now().After(deadline) {
				t.Fatal("the text file's content was not extracted within 10 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		is.Equal(get(id)["content"], "Hello, attachments — ünïcode")
		for _, it := range entItems(t, e.attLibrary(f.key, "search=note")) {
			is.Equal(it["content"], "Hello, attachments — ünïcode")
		}
		// A partition without OCR keeps null; so does an image (no OCR
		// plugged in).
		time.Sleep(200 * time.Millisecond)
		is.Equal(get(skipped["id"].(string))["content"], nil)
		is.Equal(get(img["id"].(string))["content"], nil)
	})
}
