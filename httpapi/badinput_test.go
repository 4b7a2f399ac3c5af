package httpapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// badKeys are field names the API's bodies use, across every area: the
// bad-input bodies set each of them, so that every decoder meets a bad
// value of a field it reads.
var badKeys = []string{"id", "name", "title", "key", "label", "kind", "code", "description", "entityId", "recordId",
	"values", "data", "ruleId", "setId", "ruleType", "conditionExpression", "successActions", "failureActions",
	"providerKey", "amount", "currencyCode", "captureMethod", "transactionId", "operationId", "reason", "metadata",
	"url", "subscribedEvents", "httpMethod", "customHeaders", "identifier", "type", "defaultValue", "value",
	"tenantId", "organizationId", "parentId", "email", "password", "token", "roles", "roleId", "features",
	"organizations", "tags", "partitionCode", "attachmentIds", "toRecordId", "assignments", "customFields",
	"definitions", "isPublic", "requiresOcr", "enabled", "isActive", "eventType", "entityType", "sequence",
	"priority", "dryRun", "page", "pageSize", "configJson", "fieldKey", "widgets", "widgetIds", "mode", "userId",
	"integrationId", "direction", "batchSize", "fullSync", "triggeredBy", "fromBeginning", "credentials", "apiVersion",
	"isEnabled", "reauthRequired", "notifyAdminsOnFailure"}

// badBodies are the bodies every writing route must refuse (or take)
// with a 4xx, never a 5xx.
func badBodies() map[string]string {
	object := func(value string) string {
		parts := make([]string, len(badKeys))
		for i, k := range badKeys {
			parts[i] = fmt.Sprintf("%q:%s", k, value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return map[string]string{
		"malformed":         `{"name":`,
		"top-level array":   `[{"name":"x"}]`,
		"top-level string":  `"x"`,
		"null":              `null`,
		"empty object":      `{}`,
		"NUL strings":       object(`"a\u0000b"`),
		"NUL keys":          `{"\u0000":"x","values":{"\u0000":"x"},"metadata":{"\u0000":1},"data":{"a\u0000":1}}`,
		"huge numbers":      object(`1e999999`),
		"long integers":     object(`123456789012345678901234567890`),
		"negative numbers":  object(`-1e308`),
		"arrays everywhere": object(`[[],{},null,1,"x"]`),
		"objects":           object(`{"a":{"b":{"c":[1,"\u0000"]}}}`),
		"booleans":          object(`true`),
		"nulls":             object(`null`),
		"long strings":      object(`"` + strings.Repeat("x", 70_000) + `"`),
		"deep nesting":      `{"values":` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}`,
	}
}

// TestBadInputNeverFails sends every writing route of the route table the
// bad bodies above, and every reading route bad query values, as a super
// admin (who passes every feature check, so the handlers themselves meet
// the input): each answer is below 500. A new route is covered by being
// in the table.
func TestBadInputNeverFails(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := permNewEnv(t, db)
		routes := (&api{kit: e.kit.Kit, opts: Options{Auth: e.auth}}).routes()
		words := permWords(routes)
		bodies := badBodies()
		names := make([]string, 0, len(bodies))
		for n := range bodies {
			names = append(names, n)
		}
		sort.Strings(names)
		badQueries := []string{"page=1e999&pageSize=-1", "page=%00&pageSize=%ff", "id=%00&entityId=%ff%fe&search=%00",
			"transactionId=" + strings.Repeat("9", 400), "sortField=%00&sortDir=sideways&status=%00&tags=%00",
			"width=99999999999999999999&height=-1&cropType=%00", "q=%00&limit=1e9&cursor=%ff"}
		// 64 MiB, made once: as a []byte, sending it copies nothing.
		big := []byte(`{"name":"` + strings.Repeat("x", 64<<20) + `"}`)
		checked := 0
		for i, rt := range routes {
			if rt.Path == "/ready" {
				continue // 503 is its answer until the Kit starts (TestReady)
			}
			path, shown, ok := permPath(routes, i, nil, words)
			if !ok {
				t.Errorf("%s %s: no path reaches it", rt.Method, rt.Path)
				continue
			}
			name := permName(rt, shown)
			key := e.superKey
			if rt.Access.Public {
				key = ""
			}
			if rt.Method == "GET" {
				for _, q := range badQueries {
					r := e.with(t).do(rt.Method, path+"?"+q, key, nil)
					if r.Status >= 500 {
						t.Errorf("%s?%s: %d %s", name, q, r.Status, r.Body)
					}
				}
				checked++
				continue
			}
			for _, bn := range names {
				r := e.with(t).send(rt.Method, path, bodies[bn], func(req *http.Request) {
					req.Header.Set("Content-Type", "application/json")
					if key != "" {
						req.Header.Set("X-Api-Key", key)
					}
				})
				if r.Status >= 500 {
					t.Errorf("%s with %s: %d %s", name, bn, r.Status, r.Body)
				}
			}
			// Beyond the body limit: 413, never a partial write.
			if r := e.with(t).do(rt.Method, path, key, big); r.Status != http.StatusRequestEntityTooLarge && r.Status >= 500 {
				t.Errorf("%s with 64 MiB: %d", name, r.Status)
			}
			checked++
		}
		t.Logf("%d routes sent bad input", checked)
	})
}
