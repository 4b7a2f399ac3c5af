package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// fuzzWriteAreas are the areas whose writing routes FuzzWriteBodies
// covers: those without outbound effects (rule execution can call
// webhooks, webhook URLs are resolved in DNS, data sync fetches) and not
// covered by a target of their own (identity: FuzzRequestBodies and
// FuzzSignInForms; payments: FuzzPaymentBodies; uploads:
// FuzzAttachmentUpload; inbound webhooks: FuzzInboundRoute).
var fuzzWriteAreas = []string{"/business_rules/", "/feature_toggles/", "/dashboards/", "/entities/"}

// FuzzWriteBodies sends every writing route of those areas (POST, PUT,
// PATCH, DELETE; rule execution excepted) an arbitrary JSON body and
// query string, with its path wildcards set to an arbitrary segment, as
// a super admin: no answer is a 5xx, and every 4xx carries a JSON error
// body. A new route of these areas is covered by being in the table.
func FuzzWriteBodies(f *testing.F) {
	for _, s := range [][3]string{
		{`{}`, "", "x"},
		{`null`, "id=%00", "01a21429-6a01-79aa-aa5c-eb58d0801dae"},
		{`[`, "entityId=a.b&recordId=x", "%00"},
		{`{"entityId":"fz.e","definitions":[{"key":"a","kind":"text"}]}`, "", "x"},
		{`{"entityId":"fz.e","values":{"a":"\u0000"}}`, "force=true", "x"},
		{`{"entityId":"fz.e","key":"a","kind":"integer","configJson":{"options":[1e999]}}`, "", "x"},
		{`{"name":"r","ruleId":"R1","ruleType":"VALIDATION","entityType":"x","eventType":"y","conditionExpression":{"field":"a","operator":"=","value":1}}`, "", "x"},
		{`{"conditionExpression":"` + strings.Repeat("(", 1000) + `"}`, "", "x"},
		{`{"identifier":"t","type":"boolean","defaultValue":"x"}`, "", "x"},
		{`{"identifier":"\u0000","type":"json","defaultValue":{"a":[1,{"b":null}]}}`, "identifier=%ff", "x"},
		{`{"widgets":[{"id":"x","definitionId":"y","grid":{"x":-1,"y":1e9,"w":0,"h":1.5}}]}`, "", "x"},
		{`{"roleId":"x","widgetIds":["\u0000"]}`, "", "x"},
		{`{"userId":"x","mode":"override","widgetIds":null}`, "", "../x"},
		{"\x00\xff", "%zz", "\xff"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	envs := fuzzEnvs(f)
	var routes []apikit.Route
	for _, rt := range (&api{kit: envs[0].kit.Kit, opts: Options{Auth: envs[0].auth}}).routes() {
		inArea := false
		for _, a := range fuzzWriteAreas {
			inArea = inArea || strings.HasPrefix(rt.Path+"/", a)
		}
		if rt.Method != "GET" && inArea && !strings.Contains(rt.Path, "execute") {
			routes = append(routes, rt)
		}
	}
	if len(routes) < 10 {
		f.Fatalf("only %d writing routes found in %v", len(routes), fuzzWriteAreas)
	}
	f.Fuzz(func(t *testing.T, body, query, segment string) {
		for _, fe := range envs {
			e := fe.with(t)
			for _, rt := range routes {
				path := "/api" + rt.Path
				for {
					i, j := strings.IndexByte(path, '{'), strings.IndexByte(path, '}')
					if i < 0 || j < i {
						break
					}
					path = path[:i] + url.PathEscape(segment) + path[j+1:]
				}
				r := e.send(rt.Method, path, body, func(r *http.Request) {
					r.URL.RawQuery = query
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set("X-Api-Key", e.superKey)
				})
				where := fe.engine + ": " + rt.Method + " " + path + "?" + query + " with " + fzQuote(body)
				if r.Status >= 500 {
					t.Fatalf("%s: status %d: %s", where, r.Status, r.Body)
				}
				if r.Status >= 400 && len(r.Body) > 0 && r.JSON()["error"] == nil {
					t.Fatalf("%s: %d without an error: %s", where, r.Status, r.Body)
				}
			}
		}
	})
}
