package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"mime/multipart"
	"net/url"
	"slices"
	"strings"
	"time"
)

// worker sends one request at a time, picking weighted operations over
// every area, until the deadline. Each keeps its own objects (records,
// attachments, rules, payments) and deletes the oldest beyond a cap.
type worker struct {
	e          *env
	t          *tenant
	id         int
	rng        *rand.Rand
	key, keyID string
	email      string
	password   string
	token      string // a session token from sign-in
	n          int    // a sequence for names

	records []string
	atts    []attRef
	rules   []string // ids of the worker's own rules
	txs     []string // payments
	roles   []string // roles the worker made (reused once there are 3)
}

type attRef struct {
	id     string
	png    bool
	record string
}

// Caps of what a worker keeps alive.
const (
	maxRecords = 150
	maxAtts    = 30
	maxRules   = 8
	maxTxs     = 50
	maxRoles   = 3
)

// op is one weighted operation.
type op struct {
	name   string
	weight float64
	run    func(w *worker, ctx context.Context)
}

// ops are the operations, by area.
var ops = []op{
	// Feature toggles.
	{"toggles.check", 8, (*worker).toggleCheck},
	{"toggles.override", 1, (*worker).toggleOverride},
	{"toggles.admin", 1, (*worker).toggleAdmin},
	{"toggles.default", 0.3, (*worker).toggleDefault},
	{"toggles.temp", 0.1, (*worker).toggleTemp},
	// Business rules.
	{"rules.execute-set", 4, (*worker).ruleExecSet},
	{"rules.execute", 3, (*worker).ruleExecEntity},
	{"rules.crud", 1.5, (*worker).ruleCRUD},
	{"rules.list", 1, (*worker).ruleList},
	{"rules.logs", 2, (*worker).ruleLogs},
	{"rules.sets-read", 1, (*worker).ruleSetRead},
	{"rules.sets-temp", 0.3, (*worker).ruleSetTemp},
	// Custom entities.
	{"entities.create", 5, (*worker).entCreate},
	{"entities.list", 6, (*worker).entList},
	{"entities.update", 3, (*worker).entUpdate},
	{"entities.delete", 1, (*worker).entDelete},
	{"entities.export", 0.5, (*worker).entExport},
	{"entities.meta", 1.5, (*worker).entMeta},
	{"entities.redefine", 0.1, (*worker).entRedefine},
	// Attachments.
	{"attachments.upload", 3, (*worker).attUpload},
	{"attachments.list", 1.5, (*worker).attList},
	{"attachments.library", 2, (*worker).attLibrary},
	{"attachments.detail", 1, (*worker).attDetail},
	{"attachments.file", 1.5, (*worker).attFile},
	{"attachments.image", 1, (*worker).attImage},
	{"attachments.transfer", 0.3, (*worker).attTransfer},
	{"attachments.partitions", 0.3, (*worker).attPartitions},
	// Webhooks.
	{"webhooks.read", 3, (*worker).whRead},
	{"webhooks.temp", 0.2, (*worker).whTemp},
	// Payments.
	{"payments.automatic", 2, (*worker).payAutomatic},
	{"payments.manual", 2, (*worker).payManual},
	{"payments.cancel", 0.7, (*worker).payCancel},
	{"payments.processing", 0.5, (*worker).payProcessing},
	{"payments.read", 2, (*worker).payRead},
	// Dashboards.
	{"dashboards.layout", 2, (*worker).dashLayout},
	{"dashboards.data", 2, (*worker).dashData},
	{"dashboards.item", 0.5, (*worker).dashItem},
	// Identity.
	{"identity.me", 4, (*worker).idMe},
	{"identity.read", 1, (*worker).idRead},
	{"identity.key", 0.3, (*worker).idKey},
	{"identity.login", 0.3, (*worker).idLogin},
	{"identity.super", 0.2, (*worker).idSuper},
}

// pickable returns the operations a run uses: all but those named in
// skip (an area name such as "rules" skips the area's), and their total
// weight.
func pickable(skip []string) ([]op, float64, error) {
	var out []op
	var total float64
	used := map[string]bool{}
	for _, o := range ops {
		area, _, _ := strings.Cut(o.name, ".")
		if slices.Contains(skip, o.name) || slices.Contains(skip, area) {
			used[o.name], used[area] = true, true
			continue
		}
		out = append(out, o)
		total += o.weight
	}
	for _, s := range skip {
		if !used[s] {
			return nil, 0, fmt.Errorf("-skip: no operation or area %q", s)
		}
	}
	if len(out) == 0 {
		return nil, 0, errors.New("-skip leaves no operation")
	}
	return out, total, nil
}

func (w *worker) loop(ctx context.Context, end time.Time) {
	for ctx.Err() == nil && time.Now().Before(end) {
		x := w.rng.Float64() * w.e.weight
		for _, o := range w.e.ops {
			if x -= o.weight; x < 0 {
				o.run(w, ctx)
				break
			}
		}
	}
}

// do sends a request with the worker's key.
func (w *worker) do(ctx context.Context, op, method, path string, body any, want ...int) answer {
	return w.e.c.do(ctx, call{op: op, method: method, path: path, body: body, key: w.key, want: want})
}

// super sends a request as the super admin acting in the worker's tenant.
func (w *worker) super(ctx context.Context, op, method, path string, body any, want ...int) answer {
	return w.e.c.do(ctx, call{op: op, method: method, path: path, body: body, key: w.e.superKey, tenant: w.t.id, want: want})
}

func (w *worker) next() int { w.n++; return w.n }

func (w *worker) pick(n int) int { return w.rng.IntN(n) }

func (w *worker) chance(p float64) bool { return w.rng.Float64() < p }

// ---- Feature toggles ----

func (w *worker) toggleCheck(ctx context.Context) {
	tg := w.e.toggles[w.pick(len(w.e.toggles))]
	w.do(ctx, "toggles.check", "GET", "/feature_toggles/check/"+tg.typ+"?identifier="+url.QueryEscape(tg.identifier), nil, 200)
}

func (w *worker) toggleValue(typ string) any {
	switch typ {
	case "boolean":
		return w.chance(0.5)
	case "string":
		return []string{"red", "green", "blue"}[w.pick(3)]
	case "number":
		return w.pick(100)
	default:
		return map[string]any{"mode": []string{"a", "b"}[w.pick(2)], "n": w.pick(10)}
	}
}

func (w *worker) toggleOverride(ctx context.Context) {
	tg := w.e.toggles[w.pick(len(w.e.toggles))]
	body := map[string]any{"toggleId": tg.id, "isOverride": w.chance(0.7), "overrideValue": w.toggleValue(tg.typ)}
	w.super(ctx, "toggles.override", "PUT", "/feature_toggles/overrides", body, 200)
}

func (w *worker) toggleAdmin(ctx context.Context) {
	tg := w.e.toggles[w.pick(len(w.e.toggles))]
	switch w.pick(4) {
	case 0:
		w.super(ctx, "toggles.admin", "GET", "/feature_toggles/global?search="+w.e.prefix, nil, 200)
	case 1:
		w.super(ctx, "toggles.admin", "GET", "/feature_toggles/global/"+tg.id, nil, 200)
	case 2:
		w.super(ctx, "toggles.admin", "GET", "/feature_toggles/overrides", nil, 200)
	default:
		w.super(ctx, "toggles.admin", "GET", "/feature_toggles/global/"+tg.id+"/override", nil, 200)
	}
}

func (w *worker) toggleDefault(ctx context.Context) {
	tg := w.e.toggles[w.pick(len(w.e.toggles))]
	w.super(ctx, "toggles.default", "PUT", "/feature_toggles/global", map[string]any{"id": tg.id, "defaultValue": w.toggleValue(tg.typ)}, 200)
}

func (w *worker) toggleTemp(ctx context.Context) {
	ident := fmt.Sprintf("%s.tmp_w%d_%d", w.e.prefix, w.id, w.next())
	var out struct{ ID string }
	a := w.super(ctx, "toggles.temp", "POST", "/feature_toggles/global", map[string]any{"identifier": ident, "name": "Temporary",
		"type": "boolean", "defaultValue": true}, 201)
	if !a.ok() || !a.decode(&out) {
		return
	}
	w.do(ctx, "toggles.temp", "GET", "/feature_toggles/check/boolean?identifier="+ident, nil, 200)
	w.super(ctx, "toggles.temp", "DELETE", "/feature_toggles/global?id="+out.ID, nil, 200)
}

// ---- Business rules ----

func (w *worker) order(dry bool) map[string]any {
	n := w.next()
	status := "ACTIVE"
	if w.chance(0.2) {
		status = "DRAFT"
	}
	return map[string]any{"entityType": "order", "entityId": fmt.Sprintf("o-%d-%d", w.id, n), "eventType": "beforeCreate",
		"data":   map[string]any{"status": status, "total": w.pick(1000), "orderId": fmt.Sprintf("W%d-%d", w.id, n), "channel": "web"},
		"dryRun": dry}
}

func (w *worker) ruleExecSet(ctx context.Context) {
	if !w.t.setRun.take(1) {
		w.ruleExecEntity(ctx)
		return
	}
	w.do(ctx, "rules.execute-set", "POST", "/business_rules/sets/"+flowSet+"/execute", w.order(w.chance(0.1)), 200)
}

func (w *worker) ruleExecEntity(ctx context.Context) {
	w.do(ctx, "rules.execute", "POST", "/business_rules/execute", w.order(w.chance(0.1)), 200)
}

func (w *worker) tempRule(ruleID string) map[string]any {
	return ruleBody(ruleID, "VALIDATION", "invoice", leaf("amount", ">", w.pick(500)),
		[]any{act("SHOW_INFO", map[string]any{"message": "ok {{entityId}}"})},
		[]any{act("SHOW_WARNING", map[string]any{"message": "small {{entityId}}"})})
}

func (w *worker) ruleCRUD(ctx context.Context) {
	ruleID := fmt.Sprintf("SOAK-W%d-%d", w.id, w.next())
	body := w.tempRule(ruleID)
	var r struct{ ID string }
	if a := w.do(ctx, "rules.crud", "POST", "/business_rules/rules", body, 201); !a.ok() || !a.decode(&r) {
		return
	}
	w.rules = append(w.rules, r.ID)
	w.do(ctx, "rules.crud", "GET", "/business_rules/rules/"+r.ID, nil, 200)
	body["id"] = r.ID
	body["ruleName"] = "Renamed " + ruleID
	body["priority"] = w.pick(200)
	w.do(ctx, "rules.crud", "PUT", "/business_rules/rules", body, 200)
	in := map[string]any{"entityType": "invoice", "entityId": "i-" + ruleID, "eventType": "beforeCreate",
		"data": map[string]any{"amount": w.pick(1000)}, "dryRun": w.chance(0.3)}
	w.do(ctx, "rules.crud", "POST", "/business_rules/rules/"+r.ID+"/execute", in, 200)
	for len(w.rules) > maxRules {
		w.do(ctx, "rules.crud", "DELETE", "/business_rules/rules?id="+w.rules[0], nil, 204)
		w.rules = w.rules[1:]
	}
}

func (w *worker) ruleList(ctx context.Context) {
	q := []string{"pageSize=20", "entityType=order&sortField=priority", "search=Rule&sortField=ruleName&sortDir=asc", "ruleType=GUARD&enabled=true"}[w.pick(4)]
	w.do(ctx, "rules.list", "GET", "/business_rules/rules?"+q, nil, 200)
}

func (w *worker) ruleLogs(ctx context.Context) {
	q := []string{"pageSize=20", "entityType=order&pageSize=10", "result=FAILURE&pageSize=10", "ruleId=SOAK-GUARD"}[w.pick(4)]
	a := w.do(ctx, "rules.logs", "GET", "/business_rules/logs?"+q, nil, 200)
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	if a.ok() && a.decode(&list) && len(list.Data) > 0 {
		w.do(ctx, "rules.logs", "GET", "/business_rules/logs/"+list.Data[w.pick(len(list.Data))].ID, nil, 200)
	}
}

func (w *worker) ruleSetRead(ctx context.Context) {
	if !w.t.setReads.take(2) {
		w.ruleLogs(ctx)
		return
	}
	w.do(ctx, "rules.sets-read", "GET", "/business_rules/sets?limit=20", nil, 200)
	w.do(ctx, "rules.sets-read", "GET", "/business_rules/sets/"+flowSet, nil, 200)
}

// letters spells n in A–Z (set ids are [A-Z_]+).
func letters(n int) string {
	var b []byte
	for {
		b = append(b, byte('A'+n%26))
		n /= 26
		if n == 0 {
			break
		}
	}
	slices.Reverse(b)
	return string(b)
}

func (w *worker) ruleSetTemp(ctx context.Context) {
	if !w.t.setWrites.take(6) {
		w.ruleList(ctx)
		return
	}
	id := "SOAK_TMP_" + letters(w.id) + "_" + letters(w.next())
	base := "/business_rules/sets/" + id
	if a := w.do(ctx, "rules.sets-temp", "POST", "/business_rules/sets", map[string]any{"id": id, "name": "Temporary set"}, 201); !a.ok() {
		return
	}
	w.do(ctx, "rules.sets-temp", "POST", base+"/members", map[string]any{"ruleId": "SOAK-GUARD", "sequence": 1}, 201)
	w.do(ctx, "rules.sets-temp", "PATCH", base+"/members/SOAK-GUARD", map[string]any{"enabled": false}, 200)
	w.do(ctx, "rules.sets-temp", "PATCH", base, map[string]any{"name": "Renamed temporary set"}, 200)
	w.do(ctx, "rules.sets-temp", "DELETE", base+"/members/SOAK-GUARD", nil, 204)
	w.do(ctx, "rules.sets-temp", "DELETE", base, nil, 204)
}

// ---- Custom entities ----

func (w *worker) recordValues() map[string]any {
	n := w.next()
	v := map[string]any{"name": fmt.Sprintf("item %d-%d", w.id, n), "qty": w.pick(100), "price": float64(w.pick(10000)) / 100,
		"status": statuses[w.pick(len(statuses))], "flag": w.chance(0.5)}
	if w.chance(0.5) {
		v["note"] = strings.Repeat("note ", 1+w.pick(20))
	}
	return v
}

func (w *worker) entCreate(ctx context.Context) {
	var out struct {
		Item struct {
			RecordID string `json:"recordId"`
		} `json:"item"`
	}
	a := w.do(ctx, "entities.create", "POST", "/entities/records", map[string]any{"entityId": w.t.entity, "values": w.recordValues()}, 200)
	if a.ok() && a.decode(&out) {
		w.records = append(w.records, out.Item.RecordID)
	}
	for len(w.records) > maxRecords {
		w.deleteRecord(ctx, 0)
	}
}

func (w *worker) deleteRecord(ctx context.Context, i int) {
	id := w.records[i]
	w.records = slices.Delete(w.records, i, i+1)
	w.do(ctx, "entities.delete", "DELETE", "/entities/records?entityId="+w.t.entity+"&recordId="+id, nil, 200)
}

func (w *worker) entList(ctx context.Context) {
	q := []string{
		"pageSize=20&sortField=createdAt&sortDir=desc",
		"cf_status=" + statuses[w.pick(3)] + "&sortField=qty&sortDir=desc&pageSize=20",
		"cf_qtyGte=" + fmt.Sprint(w.pick(90)) + "&cf_qtyLt=95&pageSize=10",
		"cf_statusIn=open,hold&cf_flag=true&page=2&pageSize=10",
		"search=item+" + fmt.Sprint(w.id) + "&pageSize=20",
		"sortField=price&sortDir=asc&pageSize=50",
	}[w.pick(6)]
	w.do(ctx, "entities.list", "GET", "/entities/records?entityId="+w.t.entity+"&"+q, nil, 200)
}

func (w *worker) entUpdate(ctx context.Context) {
	if len(w.records) == 0 {
		w.entCreate(ctx)
		return
	}
	id := w.records[w.pick(len(w.records))]
	values := map[string]any{"qty": w.pick(100), "status": statuses[w.pick(3)]}
	if w.chance(0.3) {
		values["note"] = nil
	}
	w.do(ctx, "entities.update", "PUT", "/entities/records", map[string]any{"entityId": w.t.entity, "recordId": id, "values": values}, 200)
}

func (w *worker) entDelete(ctx context.Context) {
	if len(w.records) < 20 {
		w.entCreate(ctx)
		return
	}
	w.deleteRecord(ctx, w.pick(len(w.records)))
}

func (w *worker) entExport(ctx context.Context) {
	format := []string{"csv", "json", "xml", "markdown"}[w.pick(4)]
	w.do(ctx, "entities.export", "GET", "/entities/records?entityId="+w.t.entity+"&format="+format+"&cf_status=open", nil, 200)
}

func (w *worker) entMeta(ctx context.Context) {
	switch w.pick(5) {
	case 0:
		w.do(ctx, "entities.meta", "GET", "/entities/entities", nil, 200)
	case 1:
		w.do(ctx, "entities.meta", "GET", "/entities/sidebar-entities", nil, 200)
	case 2:
		w.do(ctx, "entities.meta", "GET", "/entities/definitions?entityId="+w.t.entity, nil, 200)
	case 3:
		w.do(ctx, "entities.meta", "GET", "/entities/definitions.manage?entityId="+w.t.entity, nil, 200)
	default:
		w.do(ctx, "entities.meta", "GET", "/entities/relations/options?entityId="+w.t.entity+"&labelField=name&q=item&pageSize=10", nil, 200)
	}
}

// entRedefine rewrites a definition: the field cache's version moves and
// every process drops its cached definitions.
func (w *worker) entRedefine(ctx context.Context) {
	def := map[string]any{"entityId": w.t.entity, "key": "note", "kind": "text", "configJson": map[string]any{"label": fmt.Sprintf("Note %d", w.next())}}
	w.do(ctx, "entities.redefine", "POST", "/entities/definitions", def, 200)
}

// ---- Attachments ----

func (w *worker) attUpload(ctx context.Context) {
	n := w.next()
	record := fmt.Sprintf("w%d-r%d", w.id, n%10)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	isPNG := w.chance(0.4)
	fields := [][2]string{{"entityId", attEntity}, {"recordId", record}, {"tags", fmt.Sprintf(`["soak","w%d","t%d"]`, w.id, n%3)}}
	name, data := fmt.Sprintf("note-%d-%d.txt", w.id, n), []byte(strings.Repeat(fmt.Sprintf("soak document %d of worker %d. ", n, w.id), 20+w.pick(100)))
	if isPNG {
		fields = append(fields, [2]string{"partitionCode", "productsMedia"})
		name, data = fmt.Sprintf("image-%d-%d.png", w.id, n), w.e.png
	}
	for _, f := range fields {
		_ = mw.WriteField(f[0], f[1])
	}
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = mw.Close()
	var out struct {
		Item struct{ ID string } `json:"item"`
	}
	a := w.e.c.do(ctx, call{op: "attachments.upload", method: "POST", path: "/attachments", body: body.Bytes(), ctype: mw.FormDataContentType(),
		key: w.key, want: []int{200}})
	if a.ok() && a.decode(&out) {
		w.atts = append(w.atts, attRef{id: out.Item.ID, png: isPNG, record: record})
	}
	for len(w.atts) > maxAtts {
		w.deleteAtt(ctx, 0)
	}
}

func (w *worker) deleteAtt(ctx context.Context, i int) {
	a := w.atts[i]
	w.atts = slices.Delete(w.atts, i, i+1)
	if w.chance(0.5) {
		w.do(ctx, "attachments.delete", "DELETE", "/attachments/library/"+a.id, nil, 200)
	} else {
		w.do(ctx, "attachments.delete", "DELETE", "/attachments?id="+a.id, nil, 200)
	}
}

func (w *worker) someAtt(ctx context.Context, pngOnly bool) (attRef, bool) {
	var cands []attRef
	for _, a := range w.atts {
		if !pngOnly || a.png {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		w.attUpload(ctx)
		return attRef{}, false
	}
	return cands[w.pick(len(cands))], true
}

func (w *worker) attList(ctx context.Context) {
	w.do(ctx, "attachments.list", "GET", fmt.Sprintf("/attachments?entityId=%s&recordId=w%d-r%d", url.QueryEscape(attEntity), w.id, w.pick(10)), nil, 200)
}

func (w *worker) attLibrary(ctx context.Context) {
	q := []string{"pageSize=20", "search=note&sortField=fileSize&sortDir=desc&pageSize=10", fmt.Sprintf("tags=w%d&pageSize=20", w.id),
		"partition=productsMedia&sortField=fileName", "page=2&pageSize=5"}[w.pick(5)]
	w.do(ctx, "attachments.library", "GET", "/attachments/library?"+q, nil, 200)
}

func (w *worker) attDetail(ctx context.Context) {
	a, ok := w.someAtt(ctx, false)
	if !ok {
		return
	}
	w.do(ctx, "attachments.detail", "GET", "/attachments/library/"+a.id, nil, 200)
	if w.chance(0.5) {
		w.do(ctx, "attachments.detail", "PATCH", "/attachments/library/"+a.id, map[string]any{"tags": []string{"soak", fmt.Sprintf("w%d", w.id), fmt.Sprintf("p%d", w.pick(5))}}, 200)
	}
}

func (w *worker) attFile(ctx context.Context) {
	a, ok := w.someAtt(ctx, false)
	if !ok {
		return
	}
	q := ""
	if w.chance(0.3) {
		q = "?download=1"
	}
	w.do(ctx, "attachments.file", "GET", "/attachments/file/"+a.id+q, nil, 200)
}

func (w *worker) attImage(ctx context.Context) {
	a, ok := w.someAtt(ctx, true)
	if !ok {
		return
	}
	size := []int{16, 24, 32}[w.pick(3)]
	crop := []string{"cover", "contain"}[w.pick(2)]
	if w.chance(0.5) {
		// A public partition: no credential needed.
		w.e.c.do(ctx, call{op: "attachments.image", method: "GET", path: fmt.Sprintf("/attachments/image/%s/thumb.png?width=%d&height=%d&cropType=%s", a.id, size, size, crop), want: []int{200}})
		return
	}
	w.do(ctx, "attachments.image", "GET", fmt.Sprintf("/attachments/image/%s?width=%d&height=%d", a.id, size, size), nil, 200)
}

func (w *worker) attTransfer(ctx context.Context) {
	if len(w.atts) == 0 {
		w.attUpload(ctx)
		return
	}
	i := w.pick(len(w.atts))
	to := fmt.Sprintf("w%d-r%d", w.id, w.pick(10))
	body := map[string]any{"entityId": attEntity, "attachmentIds": []string{w.atts[i].id}, "toRecordId": to}
	if a := w.do(ctx, "attachments.transfer", "POST", "/attachments/transfer", body, 200); a.ok() {
		w.atts[i].record = to
	}
}

func (w *worker) attPartitions(ctx context.Context) {
	w.do(ctx, "attachments.partitions", "GET", "/attachments/partitions", nil, 200)
}

// ---- Webhooks ----

func (w *worker) whRead(ctx context.Context) {
	switch w.pick(5) {
	case 0:
		w.do(ctx, "webhooks.read", "GET", "/webhooks?pageSize=20", nil, 200)
	case 1:
		w.do(ctx, "webhooks.read", "GET", "/webhooks/"+w.t.webhookID, nil, 200)
	case 2:
		w.do(ctx, "webhooks.read", "GET", "/webhooks/events", nil, 200)
	default:
		q := []string{"webhookId=" + w.t.webhookID + "&pageSize=20", "status=delivered&pageSize=10", "eventType=entities.record.created&pageSize=10"}[w.pick(3)]
		a := w.do(ctx, "webhooks.read", "GET", "/webhooks/deliveries?"+q, nil, 200)
		var list struct {
			Items []struct{ ID string } `json:"items"`
		}
		if a.ok() && a.decode(&list) && len(list.Items) > 0 {
			w.do(ctx, "webhooks.read", "GET", "/webhooks/deliveries/"+list.Items[w.pick(len(list.Items))].ID, nil, 200)
		}
	}
}

// whTemp makes a webhook to the flaky receiver path (deliveries retry),
// sends a test, rotates its secret, changes it and deletes it.
func (w *worker) whTemp(ctx context.Context) {
	body := map[string]any{"name": fmt.Sprintf("soak-tmp-%d-%d", w.id, w.next()), "url": w.e.recv.URL + "/flaky",
		"subscribedEvents": []string{"payment_gateways.*", "entities.record.*"}, "maxRetries": 3}
	var wh struct{ ID string }
	if a := w.do(ctx, "webhooks.temp", "POST", "/webhooks", body, 201); !a.ok() || !a.decode(&wh) {
		return
	}
	w.do(ctx, "webhooks.temp", "POST", "/webhooks/"+wh.ID+"/test", nil, 200)
	w.do(ctx, "webhooks.temp", "POST", "/webhooks/"+wh.ID+"/rotate-secret", nil, 200)
	w.do(ctx, "webhooks.temp", "PUT", "/webhooks/"+wh.ID, map[string]any{"description": "changed by the soak", "timeoutMs": 5000}, 200)
	w.entCreate(ctx) // an event for it
	w.do(ctx, "webhooks.temp", "DELETE", "/webhooks/"+wh.ID, nil, 204)
}

// ---- Payments ----

type session struct {
	TransactionID string `json:"transactionId"`
	SessionID     string `json:"sessionId"`
	Status        string `json:"status"`
}

func (w *worker) amount() json.Number {
	return json.Number(fmt.Sprintf("%d.%02d", 20+w.pick(200), w.pick(100)))
}

func (w *worker) open(ctx context.Context, op, provider, method string) (session, bool) {
	body := map[string]any{"providerKey": provider, "amount": w.amount(), "currencyCode": []string{"USD", "EUR"}[w.pick(2)],
		"description": fmt.Sprintf("Order %d-%d", w.id, w.next()), "metadata": map[string]any{"worker": w.id}}
	if method != "" {
		body["captureMethod"] = method
	}
	var s session
	a := w.do(ctx, op, "POST", "/payment_gateways/sessions", body, 201)
	if !a.ok() || !a.decode(&s) {
		return s, false
	}
	w.txs = append(w.txs, s.TransactionID)
	if len(w.txs) > maxTxs {
		w.txs = w.txs[1:]
	}
	return s, true
}

func (w *worker) payAutomatic(ctx context.Context) {
	s, ok := w.open(ctx, "payments.automatic", "mock", "")
	if !ok {
		return
	}
	w.do(ctx, "payments.automatic", "GET", "/payment_gateways/status?transactionId="+s.TransactionID, nil, 200)
	if w.chance(0.5) {
		w.do(ctx, "payments.automatic", "POST", "/payment_gateways/refund", map[string]any{"transactionId": s.TransactionID, "amount": 5}, 200)
		w.do(ctx, "payments.automatic", "POST", "/payment_gateways/refund", map[string]any{"transactionId": s.TransactionID}, 200)
	}
}

func (w *worker) payManual(ctx context.Context) {
	s, ok := w.open(ctx, "payments.manual", "mock", "manual")
	if !ok {
		return
	}
	w.do(ctx, "payments.manual", "POST", "/payment_gateways/capture", map[string]any{"transactionId": s.TransactionID, "amount": 15}, 200)
	op := fmt.Sprintf("refund-%d-%d", w.id, w.next())
	refund := map[string]any{"transactionId": s.TransactionID, "amount": 5, "operationId": op}
	w.do(ctx, "payments.manual", "POST", "/payment_gateways/refund", refund, 200)
	if w.chance(0.3) {
		// A retry with the same operation id replays the answer.
		w.do(ctx, "payments.manual", "POST", "/payment_gateways/refund", refund, 200)
	}
	w.do(ctx, "payments.manual", "GET", "/payment_gateways/status?transactionId="+s.TransactionID, nil, 200)
}

func (w *worker) payCancel(ctx context.Context) {
	s, ok := w.open(ctx, "payments.cancel", "mock", "manual")
	if !ok {
		return
	}
	w.do(ctx, "payments.cancel", "POST", "/payment_gateways/cancel", map[string]any{"transactionId": s.TransactionID}, 200)
	// Capturing a cancelled payment is refused with 409.
	if w.chance(0.3) {
		w.do(ctx, "payments.cancel", "POST", "/payment_gateways/capture", map[string]any{"transactionId": s.TransactionID}, 409)
	}
}

// payProcessing opens a mock_processing session (pending) and settles it
// with a signed provider webhook, applied by a background job.
func (w *worker) payProcessing(ctx context.Context) {
	if !w.e.hookPace.take(1) {
		w.payRead(ctx)
		return
	}
	s, ok := w.open(ctx, "payments.processing", "mock_processing", "")
	if !ok {
		return
	}
	typ, status := "payment.captured", "captured"
	if w.chance(0.2) {
		typ, status = "payment.failed", "failed"
	}
	body, _ := json.Marshal(map[string]any{"id": "evt_" + randomHex(8), "type": typ, "data": map[string]any{"id": s.SessionID, "status": status}})
	w.e.c.do(ctx, call{op: "payments.processing", method: "POST", path: "/payment_gateways/webhook/mock_processing", body: body,
		ctype: "application/json", header: map[string]string{"X-Mock-Signature": mockSignature(body, w.e.mockSecret)}, want: []int{202}})
}

func (w *worker) payRead(ctx context.Context) {
	switch w.pick(5) {
	case 0:
		w.do(ctx, "payments.read", "GET", "/payment_gateways/transactions?pageSize=20", nil, 200)
	case 1:
		st := []string{"captured", "partially_refunded", "refunded", "cancelled", "pending"}[w.pick(5)]
		w.do(ctx, "payments.read", "GET", "/payment_gateways/transactions?status="+st+"&providerKey=mock&pageSize=10", nil, 200)
	case 2:
		w.do(ctx, "payments.read", "GET", "/payment_gateways/providers", nil, 200)
	default:
		if len(w.txs) == 0 {
			w.payAutomatic(ctx)
			return
		}
		id := w.txs[w.pick(len(w.txs))]
		if w.chance(0.5) {
			w.do(ctx, "payments.read", "GET", "/payment_gateways/transactions/"+id, nil, 200)
		} else {
			w.do(ctx, "payments.read", "POST", "/payment_gateways/status", map[string]any{"transactionId": id}, 200)
		}
	}
}

// ---- Dashboards ----

var widgetIDs = []string{"webhooks.delivery_health", "business_rules.executions", "attachments.storage", "payment_gateways.summary"}

type layout struct {
	Widgets []map[string]any `json:"widgets"`
}

func (w *worker) dashLayout(ctx context.Context) {
	var l layout
	a := w.do(ctx, "dashboards.layout", "GET", "/dashboards/layout", nil, 200)
	if !a.ok() || !a.decode(&l) {
		return
	}
	tag := a.header.Get("ETag")
	for _, wd := range l.Widgets {
		wd["config"] = map[string]any{"title": fmt.Sprintf("soak %d", w.next())}
	}
	if w.chance(0.3) {
		slices.Reverse(l.Widgets)
	}
	put := func(tag string, want int) answer {
		return w.e.c.do(ctx, call{op: "dashboards.layout", method: "PUT", path: "/dashboards/layout", body: l, key: w.key,
			header: map[string]string{"If-Match": tag}, want: []int{want}})
	}
	b := put(tag, 200)
	if b.ok() && w.chance(0.2) {
		put(tag, 412) // the tag read before the write is stale now
	}
}

func (w *worker) dashData(ctx context.Context) {
	if w.chance(0.2) {
		w.do(ctx, "dashboards.data", "GET", "/dashboards/widgets", nil, 200)
		return
	}
	w.do(ctx, "dashboards.data", "GET", "/dashboards/widgets/"+widgetIDs[w.pick(len(widgetIDs))]+"/data", nil, 200)
}

func (w *worker) dashItem(ctx context.Context) {
	var l layout
	if a := w.do(ctx, "dashboards.item", "GET", "/dashboards/layout", nil, 200); !a.ok() || !a.decode(&l) || len(l.Widgets) == 0 {
		return
	}
	id, _ := l.Widgets[w.pick(len(l.Widgets))]["id"].(string)
	w.do(ctx, "dashboards.item", "GET", "/dashboards/layout/"+id, nil, 200)
}

// ---- Identity ----

func (w *worker) idMe(ctx context.Context) {
	if w.token != "" && w.chance(0.2) {
		w.e.c.do(ctx, call{op: "identity.me", method: "GET", path: "/auth/me", key: "Bearer " + w.token, want: []int{200}})
		return
	}
	w.do(ctx, "identity.me", "GET", "/auth/me", nil, 200)
}

func (w *worker) idRead(ctx context.Context) {
	path := []string{"/directory/organization-switcher", "/directory/organizations", "/auth/roles?pageSize=20", "/api_keys/keys?pageSize=20"}[w.pick(4)]
	w.do(ctx, "identity.read", "GET", path, nil, 200)
}

var someFeatures = []string{"entities.records.view", "attachments.view", "payment_gateways.view", "dashboard.widgets.view",
	"webhooks.view", "business_rules.rules.view", "business_rules.logs.view"}

// idKey sets a role's features (making up to three roles), creates a key
// with it, uses it and deletes it.
func (w *worker) idKey(ctx context.Context) {
	var roleID string
	if len(w.roles) < maxRoles {
		var r struct{ ID string }
		a := w.do(ctx, "identity.key", "POST", "/auth/roles", map[string]any{"name": fmt.Sprintf("soak-w%d-role-%d", w.id, len(w.roles))}, 201)
		if !a.ok() || !a.decode(&r) {
			return
		}
		w.roles = append(w.roles, r.ID)
		roleID = r.ID
	} else {
		roleID = w.roles[w.pick(len(w.roles))]
	}
	features := slices.Clone(someFeatures)
	w.rng.Shuffle(len(features), func(i, j int) { features[i], features[j] = features[j], features[i] })
	w.do(ctx, "identity.key", "PUT", "/auth/roles/acl", map[string]any{"roleId": roleID, "features": features[:1+w.pick(len(features))]}, 200)
	var k struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	body := map[string]any{"name": fmt.Sprintf("soak-tmp-%d-%d", w.id, w.next()), "organizationId": w.t.orgID, "roles": []string{roleID}}
	if a := w.do(ctx, "identity.key", "POST", "/api_keys/keys", body, 201); !a.ok() || !a.decode(&k) {
		return
	}
	for range 1 + w.pick(3) {
		w.e.c.do(ctx, call{op: "identity.key", method: "GET", path: "/auth/me", key: k.Secret, want: []int{200}})
	}
	w.do(ctx, "identity.key", "DELETE", "/api_keys/keys?id="+k.ID, nil, 200)
	// A deleted key is refused (the process drops its cached credentials
	// on every identity change).
	w.e.c.do(ctx, call{op: "identity.key", method: "GET", path: "/auth/me", key: k.Secret, want: []int{401}})
}

// idLogin signs in with the worker's user and uses the session token.
func (w *worker) idLogin(ctx context.Context) {
	if !w.e.loginPace.take(1) {
		w.idMe(ctx)
		return
	}
	var out struct {
		OK    bool   `json:"ok"`
		Token string `json:"token"`
	}
	a := w.e.c.do(ctx, call{op: "identity.login", method: "POST", path: "/login", body: map[string]any{"email": w.email, "password": w.password}, want: []int{200}})
	if !a.ok() || !a.decode(&out) || out.Token == "" {
		return
	}
	w.token = out.Token
	w.e.c.do(ctx, call{op: "identity.login", method: "GET", path: "/auth/me", key: "Bearer " + w.token, want: []int{200}})
	w.e.c.do(ctx, call{op: "identity.login", method: "GET", path: "/dashboards/layout", key: "Bearer " + w.token, want: []int{200}})
}

func (w *worker) idSuper(ctx context.Context) {
	w.e.c.do(ctx, call{op: "identity.super", method: "GET", path: "/directory/tenants?pageSize=20", key: w.e.superKey, want: []int{200}})
}

// mockSignature signs a mock provider webhook: the hex HMAC-SHA256 of the
// body with the webhook secret (payments.MockSignature).
func mockSignature(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
