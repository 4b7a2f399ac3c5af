package httpapi

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/rulebench"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// answerVolatile matches what differs between two runs of an execution:
// its times and its log rows' ids.
var answerVolatile = regexp.MustCompile(`("(?:total)?[eE]xecutionTimeMs"):[0-9.e+-]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalized is body with answerVolatile's matches replaced: times by 0,
// ids by "ID".
func normalized(body []byte) string {
	return string(answerVolatile.ReplaceAllFunc(body, func(m []byte) []byte {
		if sub := answerVolatile.FindSubmatch(m); len(sub[1]) > 0 {
			return append(sub[1], ":0"...)
		}
		return []byte("ID")
	}))
}

// The answer of a logged set execution (the benchmarks' set of ten
// rules and 20-field entity, with texts to escape) and the outputs of its
// log rows, byte for byte: the hand-written decoding of the body and
// encoding of the answer and log must write what they always wrote.
func TestRuleSetExecuteAnswerBytes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, execFeatures...)
		ctx := store.WithScope(context.Background(), store.Scope{TenantID: acme.ID})
		if err := rulebench.CreateSet(ctx, e.kit.Rules); err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal([]byte(rulebench.Data), &data); err != nil {
			t.Fatal(err)
		}
		data["lang"] = "de" // RULE_9 fails: a second output
		data["note"], data["k\u00e9y<&>"] = "caf\u00e9 <b>\"x\"\\ \u2028 \U0001F600", []any{1.5e-7, 1e21, -0.0, nil, true, map[string]any{}}
		body, _ := json.Marshal(map[string]any{"entityType": "order", "entityId": "order-1 \"é\"", "eventType": "beforeUpdate", "data": data})
		res := e.do("POST", setExecPath(rulebench.SetID), key, body).expect(200)
		if got := normalized(res.Body); got != wantAnswer+"\n" { // Encode's newline
			t.Errorf("answer\n%s\nwant\n%s", got, wantAnswer)
		}
		var logs struct {
			Data []struct {
				RuleID        string          `json:"ruleId"`
				InputContext  json.RawMessage `json:"inputContext"`
				OutputContext json.RawMessage `json:"outputContext"`
			} `json:"data"`
		}
		if err := json.Unmarshal(e.do("GET", logsBase+"?pageSize=20", key, nil).expect(200).Body, &logs); err != nil {
			t.Fatal(err)
		}
		if len(logs.Data) != 10 {
			t.Fatalf("%d log rows, want 10", len(logs.Data))
		}
		for i, row := range logs.Data {
			want := wantOutputs[row.RuleID]
			if want == "" {
				want = wantOutputs[""]
			}
			if string(row.OutputContext) != want {
				t.Errorf("log row %d (%s): output %s, want %s", i, row.RuleID, row.OutputContext, want)
			}
			if got := normalized(row.InputContext); got != wantLogInput {
				t.Errorf("log row %d (%s): input\n%s\nwant\n%s", i, row.RuleID, got, wantLogInput)
			}
		}
	})
}

const (
	wantAnswer   = `{"setId":"BENCH","setName":"Benchmark set","allowed":true,"totalExecutionTimeMs":0,"data":{"age":41,"amount":1250.5,"category":"books","channel":"web","count":7,"country":"PL","currency":"EUR","discount":5,"kéy\u003c\u0026\u003e":[1.5e-7,1e+21,0,null,true,{}],"lang":"de","limit":5000,"note":"café \u003cb\u003e\"x\"\\ \u2028 😀","priority":3,"quantity":12,"region":"EU","score":88,"source":"api","status":"ACTIVE","tier":"gold","total":2400,"type":"order","weight":3.2},"logIds":["ID","ID","ID","ID","ID","ID","ID","ID","ID","ID"],"executedRules":[{"ruleId":"RULE_0","ruleName":"Rule 0","ruleType":"GUARD","sequence":10,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"allowed":true,"message":"Transition allowed","type":"ALLOW_TRANSITION"}],"actionsExecuted":[{"type":"ALLOW_TRANSITION","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_1","ruleName":"Rule 1","ruleType":"VALIDATION","sequence":20,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_2","ruleName":"Rule 2","ruleType":"VALIDATION","sequence":30,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_3","ruleName":"Rule 3","ruleType":"VALIDATION","sequence":40,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_4","ruleName":"Rule 4","ruleType":"VALIDATION","sequence":50,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_5","ruleName":"Rule 5","ruleType":"VALIDATION","sequence":60,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_6","ruleName":"Rule 6","ruleType":"VALIDATION","sequence":70,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_7","ruleName":"Rule 7","ruleType":"VALIDATION","sequence":80,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_8","ruleName":"Rule 8","ruleType":"VALIDATION","sequence":90,"result":"SUCCESS","conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}],"executionTimeMs":0,"logId":"ID"},{"ruleId":"RULE_9","ruleName":"Rule 9","ruleType":"VALIDATION","sequence":100,"result":"FAILURE","conditionResult":false,"actionsPlanned":[{"message":"Order refused","severity":"error","type":"SHOW_ERROR"}],"actionsExecuted":[{"type":"SHOW_ERROR","success":true}],"executionTimeMs":0,"logId":"ID"}]}`
	wantLogInput = `{"data":{"age":41,"amount":1250.5,"category":"books","channel":"web","count":7,"country":"PL","currency":"EUR","discount":5,"kéy\u003c\u0026\u003e":[1.5e-7,1e+21,0,null,true,{}],"lang":"de","limit":5000,"note":"café \u003cb\u003e\"x\"\\ \u2028 😀","priority":3,"quantity":12,"region":"EU","score":88,"source":"api","status":"ACTIVE","tier":"gold","total":2400,"type":"order","weight":3.2},"entityId":"order-1 \"é\"","entityType":"order","eventType":"beforeUpdate","user":{"id":"api_key:ID"}}`
)

// wantOutputs are the log rows' outputs by rule ("": the others').
var wantOutputs = map[string]string{
	"":       `{"conditionResult":true,"actionsPlanned":[{"message":"Order checked","severity":"info","type":"SHOW_INFO"}],"actionsExecuted":[{"type":"SHOW_INFO","success":true}]}`,
	"RULE_0": `{"conditionResult":true,"actionsPlanned":[{"allowed":true,"message":"Transition allowed","type":"ALLOW_TRANSITION"}],"actionsExecuted":[{"type":"ALLOW_TRANSITION","success":true}]}`,
	"RULE_9": `{"conditionResult":false,"actionsPlanned":[{"message":"Order refused","severity":"error","type":"SHOW_ERROR"}],"actionsExecuted":[{"type":"SHOW_ERROR","success":true}]}`,
}
