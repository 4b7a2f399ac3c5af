package httpapi

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/httpapi/progressapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Long-running work reports to the progress routes, black box over HTTP
// on both engines: a records export (entities.export) and an
// attachment's text extraction (attachments.extract) show as jobs of the
// caller's tenant and organization, and end completed or failed.

// progJobs reads GET /progress/active (200) and returns the jobs of both
// lists.
func progJobs(e *testEnv, key string) []map[string]any {
	e.t.Helper()
	body := e.do("GET", progBase+"/active", key, nil).expect(200).JSON()
	var out []map[string]any
	for _, list := range []string{"active", "recentlyCompleted"} {
		for _, it := range body[list].([]any) {
			out = append(out, it.(map[string]any))
		}
	}
	return out
}

// progSees reports whether the key's GET /progress/active lists job id.
func progSees(e *testEnv, key, id string) bool {
	e.t.Helper()
	return slices.ContainsFunc(progJobs(e, key), func(j map[string]any) bool { return j["id"] == id })
}

// progOthers checks that neither another tenant's key nor a key of
// another organization of the tenant finds job id, by id or in the
// lists.
func progOthers(e *testEnv, tf tenantFixture, keyOtherTenant, id string) {
	e.t.Helper()
	org2 := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": "West " + randomHex(3), "tenantId": tf.ID}).
		expect(201).JSON()["id"].(string)
	keyOrg2 := permOrgKey(e, tf.ID, org2, progressapi.FeatureProgressView)
	for _, key := range []string{keyOtherTenant, keyOrg2} {
		e.do("GET", progBase+"/jobs/"+id, key, nil).expect(404)
		if progSees(e, key, id) {
			e.t.Fatalf("another tenant's or organization's key lists job %s", id)
		}
	}
}

func TestProgressOfRecordsExport(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme, beta := e.newTenant("Acme "+randomHex(3)), e.newTenant("Beta "+randomHex(3))
		f := &recFixture{e: e, tf: acme, key: e.newKey(acme, append(slices.Clone(recAllFeatures), progressapi.FeatureProgressView)...), eid: recEntity()}
		keyB := e.newKey(beta, progressapi.FeatureProgressView)
		f.define(recField{Key: "n", Kind: "integer"})
		// More rows than one progress report covers (exportReportEvery).
		const rows = 2*apikit.ExportReportEvery + 150
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: acme.ID, OrganizationID: acme.OrgID})
		for start := 0; start < rows; start += 500 {
			values := []map[string]any{}
			for n := start; n < min(start+500, rows); n++ {
				values = append(values, map[string]any{"n": n})
			}
			if _, err := e.kit.Entities.CreateRecords(ctx, f.eid, values); err != nil {
				t.Fatal(err)
			}
		}

		r := e.do("GET", recRecords+"?entityId="+f.eid+"&format=csv&exportScope=full", f.key, nil).expect(200)
		lines, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
		if err != nil || len(lines) != rows+1 {
			t.Fatalf("the CSV has %d lines (%v), want %d", len(lines), err, rows+1)
		}
		id := r.Header.Get(entitiesapi.ExportProgressHeader)
		if id == "" {
			t.Fatalf("the export answered without %s", entitiesapi.ExportProgressHeader)
		}
		job := progGet(e, f.key, id)
		startedAt, finishedAt := job["startedAt"], job["finishedAt"]
		if startedAt == nil || finishedAt == nil {
			t.Fatalf("the finished export's times: %v", job)
		}
		sameJSON(t, "the export's job", job, map[string]any{"id": id, "jobType": "entities.export",
			"name": "Export of " + f.eid + "_full records (CSV)", "status": "completed", "progressPercent": 100,
			"processedCount": rows, "totalCount": rows, "etaSeconds": nil, "cancellable": false,
			"startedAt": startedAt, "finishedAt": finishedAt, "errorMessage": nil})
		if !progSees(e, f.key, id) {
			t.Fatal("the finished export is not in GET /progress/active")
		}

		// Each export is a job of its own, in every format.
		for _, format := range []string{"json", "xml", "markdown"} {
			r := e.do("GET", recRecords+"?entityId="+f.eid+"&format="+format+"&pageSize=7", f.key, nil).expect(200)
			job := progGet(e, f.key, r.Header.Get(entitiesapi.ExportProgressHeader))
			if job["status"] != "completed" || job["processedCount"] != 7.0 || job["totalCount"] != 7.0 || job["id"] == id {
				t.Fatalf("the %s export's job: %v", format, job)
			}
		}
		// A list without format is no export: no job.
		before := len(progJobs(e, f.key))
		if r := e.do("GET", recRecords+"?entityId="+f.eid, f.key, nil).expect(200); r.Header.Get(entitiesapi.ExportProgressHeader) != "" {
			t.Fatal("a page answered with a progress job")
		}
		// A refused export (a bad filter) leaves no job either.
		if r := e.do("GET", recRecords+"?entityId="+f.eid+"&format=csv&cf_n=x", f.key, nil); r.Status/100 != 4 || r.Header.Get(entitiesapi.ExportProgressHeader) != "" {
			t.Fatalf("a bad filter's export: status %d, job %q", r.Status, r.Header.Get(entitiesapi.ExportProgressHeader))
		}
		if after := len(progJobs(e, f.key)); after != before {
			t.Fatalf("the lists hold %d jobs after a page and a refused export, %d before", after, before)
		}

		progOthers(e, acme, keyB, id)
	})
}

func TestProgressOfExtraction(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := attNewEnv(t, db, attachments.Options{})
		e.start()
		f := attSetup(e, "Acme")
		key := e.newKey(f.tf, append(slices.Clone(attAllFeatures), progressapi.FeatureProgressView)...)
		beta := e.newTenant("Beta")
		keyB := e.newKey(beta, progressapi.FeatureProgressView)

		// waitJob waits for the job named name to reach status, and
		// returns it as GET /progress/jobs/{id} answers.
		waitJob := func(name, status string) map[string]any {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for {
				for _, j := range progJobs(e, key) {
					if j["name"] == name && j["status"] == status {
						return progGet(e, key, j["id"].(string))
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no job %q %s within 20 s: %v", name, status, progJobs(e, key))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}

		f.upload("r", "note.txt", []byte("Hello, progress"))
		job := waitJob("Text extraction of note.txt", "completed")
		sameJSON(t, "the extraction's job", job, map[string]any{"id": job["id"], "jobType": "attachments.extract",
			"name": "Text extraction of note.txt", "status": "completed", "progressPercent": 100,
			"processedCount": 1, "totalCount": 1, "etaSeconds": nil, "cancellable": false,
			"startedAt": job["startedAt"], "finishedAt": job["finishedAt"], "errorMessage": nil})
		if job["startedAt"] == nil || job["finishedAt"] == nil {
			t.Fatalf("the finished extraction's times: %v", job)
		}

		// A file the extractor refuses: the job fails with the reason
		// the attachment shows.
		broken := f.upload("r", "broken.docx", []byte("PK\x03\x04 this is not a zip archive "+strconv.Itoa(42)))
		job = waitJob("Text extraction of broken.docx", "failed")
		item := e.do("GET", attBase+"/library/"+broken["id"].(string), key, nil).expect(200).JSON()["item"].(map[string]any)
		if item["extractionStatus"] != attachments.ExtractionFailed || job["errorMessage"] != item["extractionError"] ||
			job["jobType"] != "attachments.extract" || job["finishedAt"] == nil {
			t.Fatalf("the refused file's job %v, its attachment %v", job, item)
		}

		// A partition without extraction makes no job.
		e.do("POST", attBase+"/partitions", f.key, map[string]any{"code": "noocr", "title": "No OCR", "requiresOcr": false}).expect(201)
		f.upload("r", "skip.txt", []byte("not read"), "partitionCode", "noocr")
		for _, j := range progJobs(e, key) {
			if j["name"] == "Text extraction of skip.txt" {
				t.Fatalf("a file of a partition without extraction has a job: %v", j)
			}
		}

		progOthers(e, f.tf, keyB, job["id"].(string))
	})
}
