package rulesapi

import (
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
)

// Features of the rules routes. Rule-set routes need authentication only.
const (
	FeatureRulesView    = "business_rules.rules.view"
	FeatureRulesCreate  = "business_rules.rules.create"
	FeatureRulesEdit    = "business_rules.rules.edit"
	FeatureRulesDelete  = "business_rules.rules.delete"
	FeatureRulesExecute = "business_rules.rules.execute"
	FeatureLogsView     = "business_rules.logs.view"
)

// The rule-set limits, per tenant per minute: reads share one
// bucket, writes (members included) another.
var (
	ruleSetReads  = &apikit.RateLimit{Points: 100, Duration: time.Minute, KeyPrefix: "business_rules-sets-read", PerTenant: true}
	ruleSetWrites = &apikit.RateLimit{Points: 50, Duration: time.Minute, KeyPrefix: "business_rules-sets-write", PerTenant: true}
	ruleSetRuns   = &apikit.RateLimit{Points: 200, Duration: time.Minute, KeyPrefix: "business_rules-sets-execute", PerTenant: true}
)

// routes are the business rules, rule sets, execution and execution
// log endpoints.
func routes(svc *rules.Service, env *apikit.Env) []apikit.Route {
	h := ruleHandlers{svc: svc}
	const sets, rulesPath = "/business_rules/sets", "/business_rules/rules"
	set := func(rt apikit.Route) apikit.Route {
		rt.Path, rt.ErrorBody = sets+rt.Path, ruleSetErrorBody
		return rt
	}
	enabled := apikit.BoolQuery("enabled", "Only enabled (true) or disabled (false) ones")
	return []apikit.Route{
		set(apikit.Route{Method: "GET", Handler: h.listSets,
			Limits: apikit.Limits{RateLimit: ruleSetReads},
			Doc: apikit.Doc{Summary: "List rule sets",
				Query:    append([]apikit.Param{apikit.TextQuery("search", "Text in the name or description (case-insensitive)"), enabled}, apikit.LimitOffsetQuery(50, 100)...),
				Response: setList{}}}),
		set(apikit.Route{Method: "POST", Handler: h.createSet,
			Access: apikit.Access{TenantWide: true},
			Limits: apikit.Limits{RateLimit: ruleSetWrites},
			Doc: apikit.Doc{Summary: "Create a rule set", Request: rules.SetInput{}, Status: http.StatusCreated,
				Response: rules.RuleSet{}, Errors: []int{http.StatusConflict}}}),
		set(apikit.Route{Method: "GET", Path: "/{setId}", Handler: h.getSet,
			Limits: apikit.Limits{RateLimit: ruleSetReads},
			Doc:    apikit.Doc{Summary: "Get a rule set with its members", Response: ruleSetDetail{}}}),
		set(apikit.Route{Method: "PATCH", Path: "/{setId}", Handler: h.updateSet,
			Access: apikit.Access{TenantWide: true},
			Limits: apikit.Limits{RateLimit: ruleSetWrites},
			Doc:    apikit.Doc{Summary: "Update a rule set", Request: rules.SetPatch{}, Response: rules.RuleSet{}}}),
		set(apikit.Route{Method: "DELETE", Path: "/{setId}", Handler: h.deleteSet,
			Access: apikit.Access{TenantWide: true},
			Limits: apikit.Limits{RateLimit: ruleSetWrites},
			Doc: apikit.Doc{Summary: "Delete a rule set (force=true detaches its members)",
				Query:  []apikit.Param{apikit.BoolQuery("force", "Detach the set's members instead of refusing a set that has some (409 SET_HAS_MEMBERS)")},
				Status: http.StatusNoContent, Errors: []int{http.StatusConflict}}}),
		set(apikit.Route{Method: "POST", Path: "/{setId}/members", Handler: h.addMember,
			Access: apikit.Access{TenantWide: true},
			Limits: apikit.Limits{RateLimit: ruleSetWrites},
			Doc: apikit.Doc{Summary: "Add a rule to a set", Request: rules.MemberInput{}, Status: http.StatusCreated,
				Response: rules.SetMember{}, Errors: []int{http.StatusConflict}}}),
		set(apikit.Route{Method: "PATCH", Path: "/{setId}/members/{ruleId}", Handler: h.updateMember,
			Access: apikit.Access{TenantWide: true},
			Limits: apikit.Limits{RateLimit: ruleSetWrites},
			Doc: apikit.Doc{Summary: "Change a member's sequence or enabled flag", Request: rules.MemberPatch{},
				Response: rules.SetMember{}}}),
		set(apikit.Route{Method: "DELETE", Path: "/{setId}/members/{ruleId}", Handler: h.removeMember,
			Access: apikit.Access{TenantWide: true},
			Limits: apikit.Limits{RateLimit: ruleSetWrites},
			Doc:    apikit.Doc{Summary: "Remove a rule from a set", Status: http.StatusNoContent}}),
		set(apikit.Route{Method: "POST", Path: "/{setId}/execute", Handler: h.executeSet,
			Limits: apikit.Limits{RateLimit: ruleSetRuns},
			Doc: apikit.Doc{Summary: "Execute a rule set (entityType, entityId, eventType and data are required)",
				Request: executeSetInput{}, Response: executionResult{}, Errors: []int{http.StatusConflict}}}),

		{Method: "GET", Path: rulesPath, Handler: h.listRules,
			Access: apikit.Access{Features: []string{FeatureRulesView}},
			Doc: apikit.Doc{Summary: "List rules", Query: append(append([]apikit.Param{
				apikit.TextQuery("search", "Text in the rule's name or business id (case-insensitive)"),
				apikit.TextQuery("ruleId", "Exact business id"),
				apikit.TextQuery("ruleType", "Exact rule type (GUARD, VALIDATION, CALCULATION, ACTION or ASSIGNMENT; another value matches nothing)"),
				apikit.TextQuery("entityType", "Exact entity type"), apikit.TextQuery("eventType", "Exact event type"),
				apikit.TextQuery("ruleCategory", "Exact category"), enabled,
			}, apikit.PageQuery(20, 100)...), apikit.SortQuery(ruleSortFields, "createdAt")...), Response: rulePage{}}},
		{Method: "POST", Path: rulesPath, Handler: h.createRule,
			Access: apikit.Access{Features: []string{FeatureRulesCreate}},
			Doc: apikit.Doc{Summary: "Create a rule", Request: rules.RuleInput{}, Status: http.StatusCreated, Response: rules.Rule{},
				Errors: []int{http.StatusConflict}}},
		{Method: "GET", Path: rulesPath + "/{id}", Handler: h.getRule,
			Access: apikit.Access{Features: []string{FeatureRulesView}},
			Doc:    apikit.Doc{Summary: "Get a rule", Response: rules.Rule{}}},
		{Method: "PUT", Path: rulesPath, Handler: h.updateRule,
			Access: apikit.Access{Features: []string{FeatureRulesEdit}},
			Doc: apikit.Doc{Summary: "Update a rule (id in the body)", Request: ruleUpdateInput{}, Response: rules.Rule{},
				Errors: []int{http.StatusNotFound, http.StatusConflict}}},
		{Method: "DELETE", Path: rulesPath, Handler: h.deleteRule,
			Access: apikit.Access{Features: []string{FeatureRulesDelete}},
			Doc: apikit.Doc{Summary: "Delete a rule (?id=)",
				Query: []apikit.Param{{Name: "id", Required: true, Description: "The rule's id"}}, Status: http.StatusNoContent,
				Errors: []int{http.StatusNotFound}}},
		{Method: "POST", Path: rulesPath + "/{id}/execute", Handler: h.executeRule,
			Access: apikit.Access{Features: []string{FeatureRulesExecute}},
			Doc: apikit.Doc{Summary: "Execute one rule (data is required; entityType defaults to the rule's)",
				Request: executeRuleInput{}, Response: executionResult{}}},
		{Method: "POST", Path: "/business_rules/execute", Handler: h.execute,
			Access: apikit.Access{Features: []string{FeatureRulesExecute}},
			Doc: apikit.Doc{Summary: "Execute the rules of an entity type and event (entityType and data are required)",
				Request: executeInput{}, Response: executionResult{}}},
		{Method: "GET", Path: "/business_rules/logs", Handler: h.listLogs,
			Access: apikit.Access{Features: []string{FeatureLogsView}},
			Doc: apikit.Doc{Summary: "List execution log rows", Query: append([]apikit.Param{
				apikit.TextQuery("ruleId", "The rule's business id"), apikit.TextQuery("entityType", "Exact entity type"), apikit.TextQuery("entityId", "Exact entity id"),
				apikit.EnumQuery("result", "The rule's result", string(rules.StatusSuccess), string(rules.StatusFailure), string(rules.StatusError)),
				instantQuery("executedAtFrom", "Executed at or after: an RFC 3339 date-time, or a date (from its start)"),
				instantQuery("executedAtTo", "Executed at or before: an RFC 3339 date-time, or a date (to its end)"),
			}, apikit.PageQuery(20, 100)...), Response: dataPage[*rules.LogEntry]{}}},
		{Method: "GET", Path: "/business_rules/logs/{id}", Handler: h.getLog,
			Access: apikit.Access{Features: []string{FeatureLogsView}},
			Doc:    apikit.Doc{Summary: "Get an execution log row", Response: rules.LogEntry{}}},
	}
}

var (
	_ = apikit.DocEnum(rules.Types...)
	_ = apikit.DocEnum(rules.StatusSuccess, rules.StatusFailure, rules.StatusError, rules.StatusSkipped)
	_ = apikit.DocEnum(action.Types...)
)

// instantQuery documents a parseInstant parameter: both of its forms
// start with a date.
func instantQuery(name, description string) apikit.Param {
	return apikit.Param{Name: name, Pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}", Description: description}
}

type ruleHandlers struct{ svc *rules.Service }

// ruleSetErrorBody is the rule-set error body {error, code, details?}.
func ruleSetErrorBody(status int, err error, message string, details map[string]string) any {
	body := map[string]any{"error": message}
	var ce *rules.CodedError
	switch {
	case errors.As(err, &ce):
		body["code"] = ce.Code
		if ce.Details != nil {
			body["details"] = ce.Details
		}
	case status == http.StatusBadRequest:
		body["code"] = "VALIDATION_ERROR"
		if len(details) > 0 {
			body["details"] = details
		}
	case status == http.StatusUnauthorized:
		body["code"] = "UNAUTHORIZED"
	case status == http.StatusForbidden:
		body["code"] = "FORBIDDEN"
	case status == http.StatusRequestEntityTooLarge:
		body["code"] = "PAYLOAD_TOO_LARGE"
	default:
		body["code"] = "ERROR"
	}
	return body
}

// setList is the rule-set list body.
type setList struct {
	Data       []*rules.RuleSet `json:"data"`
	Pagination setPagination    `json:"pagination"`
}

// setPagination is the rule-set list's limit/offset paging.
type setPagination struct {
	Total       int  `json:"total"`
	TotalCapped bool `json:"totalCapped,omitempty" jsonschema:"description=Present and true when a search matched more sets than a search's total counts (10000): total is then 10000. Without a search the total is exact and the field is absent."`
	Limit       int  `json:"limit"`
	Offset      int  `json:"offset"`
}

func (h ruleHandlers) listSets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	lo, err := apikit.ParseLimitOffset(q, 50, 100)
	if err != nil {
		return err
	}
	enabled, err := apikit.ParseBool(q, "enabled")
	if err != nil {
		return err
	}
	search := q.Get("search")
	items, total, err := h.svc.ListSets(r.Context(), rules.SetFilter{Search: search, Enabled: enabled, Limit: lo.Limit, Offset: lo.Offset})
	if err != nil {
		return err
	}
	out := setList{Data: items}
	if out.Data == nil {
		out.Data = []*rules.RuleSet{}
	}
	out.Pagination.Total, out.Pagination.TotalCapped = store.CapTotal(r.Context(), total, search != "")
	out.Pagination.Limit, out.Pagination.Offset = lo.Limit, lo.Offset
	return apikit.Encode(w, http.StatusOK, out)
}

func (h ruleHandlers) createSet(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[rules.SetInput](r)
	if err != nil {
		return err
	}
	rs, err := h.svc.CreateSet(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, rs)
}

func (h ruleHandlers) getSet(w http.ResponseWriter, r *http.Request) error {
	rs, err := h.svc.GetSet(r.Context(), r.PathValue("setId"))
	if err != nil {
		return err
	}
	if rs.Members == nil {
		rs.Members = []rules.SetMember{}
	}
	return apikit.Encode(w, http.StatusOK, ruleSetDetail{rs, rs.Members})
}

// ruleSetDetail is a rule set with its members, which are present even
// when there are none.
type ruleSetDetail struct {
	*rules.RuleSet
	Members []rules.SetMember `json:"members"`
}

func (h ruleHandlers) updateSet(w http.ResponseWriter, r *http.Request) error {
	p, err := apikit.Decode[rules.SetPatch](r)
	if err != nil {
		return err
	}
	rs, err := h.svc.UpdateSet(r.Context(), r.PathValue("setId"), p)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, rs)
}

func (h ruleHandlers) deleteSet(w http.ResponseWriter, r *http.Request) error {
	force, err := apikit.ParseBool(r.URL.Query(), "force")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteSet(r.Context(), r.PathValue("setId"), force != nil && *force); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h ruleHandlers) addMember(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[rules.MemberInput](r)
	if err != nil {
		return err
	}
	m, err := h.svc.AddMember(r.Context(), r.PathValue("setId"), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, m)
}

func (h ruleHandlers) updateMember(w http.ResponseWriter, r *http.Request) error {
	p, err := apikit.Decode[rules.MemberPatch](r)
	if err != nil {
		return err
	}
	m, err := h.svc.UpdateMember(r.Context(), r.PathValue("setId"), r.PathValue("ruleId"), p)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, m)
}

func (h ruleHandlers) removeMember(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.RemoveMember(r.Context(), r.PathValue("setId"), r.PathValue("ruleId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// dataPage is the body of the rules and execution log lists: {data,
// pagination: {page, pageSize, total, totalPages}}.
type dataPage[T any] struct {
	Data       []T            `json:"data"`
	Pagination dataPagination `json:"pagination"`
}

// dataPagination is the page/pageSize paging of a dataPage.
type dataPagination struct {
	Page       int `json:"page"`
	PageSize   int `json:"pageSize"`
	Total      int `json:"total"`
	TotalPages int `json:"totalPages"`
}

func newDataPage[T any](items []T, total int, p apikit.PageParams) dataPage[T] {
	page := apikit.NewPage(items, total, p)
	out := dataPage[T]{Data: page.Items}
	out.Pagination.Page, out.Pagination.PageSize, out.Pagination.Total, out.Pagination.TotalPages = page.Page, page.PageSize, page.Total, page.TotalPages
	return out
}

// rulePage is the rules list's body: a dataPage whose pagination also
// says whether a search's total is capped.
type rulePage struct {
	Data       []*rules.Rule  `json:"data"`
	Pagination rulePagination `json:"pagination"`
}

// rulePagination is dataPagination with totalCapped.
type rulePagination struct {
	dataPagination
	TotalCapped bool `json:"totalCapped,omitempty" jsonschema:"description=Present and true when a search matched more rules than a search's total counts (10000): total is then 10000 and totalPages follows from it. Without a search the total is exact and the field is absent."`
}

var ruleSortFields = []string{"ruleName", "priority", "createdAt", "updatedAt"}

func (h ruleHandlers) listRules(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.ParsePage(q, 20, 100)
	if err != nil {
		return err
	}
	sort, err := apikit.ParseSort(q, ruleSortFields, "createdAt")
	if err != nil {
		return err
	}
	enabled, err := apikit.ParseBool(q, "enabled")
	if err != nil {
		return err
	}
	search := q.Get("search")
	items, total, err := h.svc.ListRules(r.Context(), rules.RuleFilter{
		Search: search, RuleID: q.Get("ruleId"), RuleType: rules.Type(q.Get("ruleType")), EntityType: q.Get("entityType"),
		EventType: q.Get("eventType"), RuleCategory: q.Get("ruleCategory"), Enabled: enabled,
		SortField: sort.Field, SortDesc: sort.Desc, Limit: p.PageSize, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	total, capped := store.CapTotal(r.Context(), total, search != "")
	page := newDataPage(items, total, p)
	return apikit.Encode(w, http.StatusOK, rulePage{Data: page.Data, Pagination: rulePagination{page.Pagination, capped}})
}

func (h ruleHandlers) createRule(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[rules.RuleInput](r)
	if err != nil {
		return err
	}
	rule, err := h.svc.CreateRule(r.Context(), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, rule)
}

func (h ruleHandlers) getRule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !store.IsID(id) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	rule, err := h.svc.GetRule(r.Context(), id)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, rule)
}

func (h ruleHandlers) updateRule(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[ruleUpdateInput](r)
	if err != nil {
		return err
	}
	if in.ID == "" {
		return store.Invalid("id", "is required")
	}
	if !store.IsID(in.ID) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	rule, err := h.svc.UpdateRule(r.Context(), in.ID, in.RuleInput)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, rule)
}

// ruleUpdateInput is the body of PUT /business_rules/rules: the rule's id
// and its fields.
type ruleUpdateInput struct {
	ID string `json:"id" jsonschema:"required"`
	rules.RuleInput
}

func (h ruleHandlers) deleteRule(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("id")
	if id == "" {
		return store.Invalid("id", "is required")
	}
	if !store.IsID(id) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	if err := h.svc.DeleteRule(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// executionResult documents the body of the three executions:
// *rules.Result as its MarshalJSON writes it, which the schema reflector
// does not see (a skipped rule has only the identifying fields, result
// and reason). The handlers encode the *rules.Result itself; the contract
// check compares the two.
type executionResult struct {
	SetID                string         `json:"setId,omitempty"`
	SetName              string         `json:"setName,omitempty"`
	Allowed              bool           `json:"allowed"`
	ExecutedRules        []executedRule `json:"executedRules"`
	TotalExecutionTimeMs float64        `json:"totalExecutionTimeMs"`
	Data                 map[string]any `json:"data,omitzero"`
	LogIDs               []string       `json:"logIds,omitzero"`
}

// executedRule documents one rule of an execution result as
// rules.RuleResult's MarshalJSON writes it.
type executedRule struct {
	RuleID          string               `json:"ruleId"`
	RuleName        string               `json:"ruleName"`
	RuleType        rules.Type           `json:"ruleType"`
	Sequence        *int                 `json:"sequence,omitempty"`
	Result          rules.Status         `json:"result"`
	Reason          string               `json:"reason,omitempty"`
	ConditionResult *bool                `json:"conditionResult,omitempty"`
	ActionsPlanned  []action.Outcome     `json:"actionsPlanned,omitzero"`
	ActionsExecuted []rules.ActionResult `json:"actionsExecuted,omitzero"`
	ExecutionTimeMs *float64             `json:"executionTimeMs,omitempty"`
	Error           string               `json:"error,omitempty"`
	LogID           string               `json:"logId,omitempty"`
}

func (h ruleHandlers) executeSet(w http.ResponseWriter, r *http.Request) error {
	in, err := DecodeRuleInput(r)
	if err != nil {
		return err
	}
	res, err := h.svc.ExecuteSet(r.Context(), r.PathValue("setId"), in)
	if err != nil {
		return err
	}
	return encodeResult(w, res)
}

func (h ruleHandlers) execute(w http.ResponseWriter, r *http.Request) error {
	in, err := DecodeRuleInput(r)
	if err != nil {
		return err
	}
	res, err := h.svc.Execute(r.Context(), in)
	if err != nil {
		return err
	}
	return encodeResult(w, res)
}

func (h ruleHandlers) executeRule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !store.IsID(id) {
		return store.Errorf(store.ErrNotFound, "Rule not found")
	}
	in, err := DecodeRuleInput(r)
	if err != nil {
		return err
	}
	res, err := h.svc.ExecuteRule(r.Context(), id, in)
	if err != nil {
		return err
	}
	return encodeResult(w, res)
}

func (h ruleHandlers) listLogs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := apikit.ParsePage(q, 20, 100)
	if err != nil {
		return err
	}
	f := rules.LogFilter{RuleID: q.Get("ruleId"), EntityType: q.Get("entityType"), EntityID: q.Get("entityId"),
		Result: rules.Status(q.Get("result")), Limit: p.PageSize, Offset: p.Offset()}
	switch f.Result {
	case "", rules.StatusSuccess, rules.StatusFailure, rules.StatusError:
	default:
		return store.Invalid("result", "must be SUCCESS, FAILURE or ERROR")
	}
	if f.From, err = parseInstant(q, "executedAtFrom", false); err != nil {
		return err
	}
	if f.To, err = parseInstant(q, "executedAtTo", true); err != nil {
		return err
	}
	items, total, err := h.svc.ListLogs(r.Context(), f)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, newDataPage(items, total, p))
}

func (h ruleHandlers) getLog(w http.ResponseWriter, r *http.Request) error {
	l, err := h.svc.GetLog(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, l)
}

// parseInstant reads an RFC 3339 date-time or a date (the day's start, or
// with endOfDay its last instant) from the query; absent is nil.
func parseInstant(q url.Values, name string, endOfDay bool) (*time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return &t, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return nil, store.Invalid(name, "must be an ISO 8601 date (2025-01-31) or date-time")
	}
	if endOfDay {
		t = t.Add(24*time.Hour - time.Microsecond)
	}
	return &t, nil
}

// answerBuffers holds the buffers results are written into (*[]byte): a
// set's result is a few KB, written once and copied out by the
// ResponseWriter, which must not keep it (io.Writer).
var answerBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 8<<10)
	return &b
}}

// maxPooledAnswer is the largest buffer kept for another answer.
const maxPooledAnswer = 64 << 10

// encodeResult answers 200 with res as apikit.EncodeMarshaled writes it
// (res.MarshalJSON and a newline), in a buffer taken from answerBuffers
// rather than one allocated per answer. The result is answered as the
// execution returned it, so it is written with AppendReturnedJSON, which
// reuses what the execution's log already wrote.
func encodeResult(w http.ResponseWriter, res *rules.Result) error {
	buf := answerBuffers.Get().(*[]byte)
	b, err := res.AppendReturnedJSON((*buf)[:0])
	if err == nil {
		b = append(b, '\n')
		err = apikit.EncodeJSON(w, http.StatusOK, b)
		if cap(b) > maxPooledAnswer {
			return err
		}
		*buf = b[:0]
	}
	answerBuffers.Put(buf)
	return err
}
