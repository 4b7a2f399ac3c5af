package httpapi

import "github.com/tenantkit/tenantkit/httpapi/internal/apikit"

// requestExamples are the example bodies the documentation shows for the
// main writes (the OpenAPI document's request examples and the
// Markdown's example requests), by "METHOD path". Routes without one get
// an example built from their schema. TestRequestExamplesSucceed sends
// them, in this order, to a fresh server: each must succeed.
var requestExamples = []struct {
	route string
	body  any
}{
	{"POST /feature_toggles/global", map[string]any{"identifier": "checkout.new_flow", "name": "New checkout flow",
		"description": "The one-page checkout", "category": "checkout", "type": "boolean", "defaultValue": false}},
	{"POST /business_rules/rules", map[string]any{"ruleId": "ORDER_MINIMUM", "ruleName": "Order minimum",
		"ruleType": "GUARD", "entityType": "order", "eventType": "beforeCreate",
		"conditionExpression": map[string]any{"field": "total", "operator": ">=", "value": 100},
		"failureActions":      []any{map[string]any{"type": "BLOCK_TRANSITION", "config": map[string]any{"message": "Minimum total is 100"}}},
		"enabled":             true, "priority": 100, "version": 1}},
	{"POST /business_rules/sets", map[string]any{"id": "ORDER_CHECKS", "name": "Order checks", "description": "Run before an order is created"}},
	{"POST /business_rules/execute", map[string]any{"entityType": "order", "eventType": "beforeCreate",
		"data": map[string]any{"orderId": "1001", "total": 250}, "dryRun": true}},
	{"POST /webhooks", map[string]any{"name": "Orders", "url": "https://hooks.example.com/orders",
		"subscribedEvents": []string{"business_rules.*", "entities.record.created"}}},
	{"POST /entities/entities", map[string]any{"entityId": "shop.product", "label": "Products"}},
	{"POST /entities/definitions.batch", map[string]any{"entityId": "shop.product", "definitions": []any{
		map[string]any{"key": "title", "kind": "text"}, map[string]any{"key": "price", "kind": "float"}}}},
	{"POST /entities/records", map[string]any{"entityId": "shop.product", "values": map[string]any{"title": "Lamp", "price": 24.5}}},
	{"POST /payment_gateways/sessions", map[string]any{"providerKey": "mock", "amount": 19.99, "currencyCode": "USD",
		"description": "Order 1001", "captureMethod": "manual"}},
	{"POST /directory/tenants", map[string]any{"name": "Acme"}},
}

// withExamples sets the example bodies of requestExamples on their routes.
func withExamples(rs []apikit.Route) []apikit.Route {
	byRoute := make(map[string]any, len(requestExamples))
	for _, ex := range requestExamples {
		byRoute[ex.route] = ex.body
	}
	for i := range rs {
		if rs[i].Doc.Example == nil {
			rs[i].Doc.Example = byRoute[rs[i].Method+" "+rs[i].DocPath()]
		}
	}
	return rs
}
