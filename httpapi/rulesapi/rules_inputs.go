package rulesapi

// The execute routes all decode rules.Input (decodeRuleInput), but each
// needs different fields of it; these types document each route's body
// with the fields it requires, so that a generated client marks them.
// A required text field must hold a non-space character.

// executeInput documents POST /business_rules/execute: entityType and
// data are required; eventType selects the rules of one event.
type executeInput struct {
	EntityType string         `json:"entityType" jsonschema:"required,minLength=1,maxLength=50,pattern=\\S,description=The entity type whose rules run"`
	EntityID   string         `json:"entityId" jsonschema:"maxLength=255,description=The entity's id (logged and given to the actions)"`
	EventType  string         `json:"eventType" jsonschema:"maxLength=50,description=The event whose rules run (beforeCreate; empty: every event's)"`
	Data       map[string]any `json:"data" jsonschema:"required,description=The entity's data the conditions read (any JSON object)"`
	DryRun     bool           `json:"dryRun" jsonschema:"description=Evaluate and plan without side effects (no log rows; events; webhook calls or SET_FIELD)"`
	Context    map[string]any `json:"context,omitempty" jsonschema:"description=Extra values that {{name}} placeholders read"`
}

// executeSetInput documents POST /business_rules/sets/{setId}/execute:
// entityType, entityId, eventType and data are required.
type executeSetInput struct {
	EntityType string         `json:"entityType" jsonschema:"required,minLength=1,maxLength=50,pattern=\\S,description=The entity type"`
	EntityID   string         `json:"entityId" jsonschema:"required,minLength=1,maxLength=255,pattern=\\S,description=The entity's id"`
	EventType  string         `json:"eventType" jsonschema:"required,minLength=1,maxLength=50,pattern=\\S,description=The event (beforeCreate)"`
	Data       map[string]any `json:"data" jsonschema:"required,description=The entity's data the conditions read (any JSON object)"`
	DryRun     bool           `json:"dryRun" jsonschema:"description=Evaluate and plan without side effects (no log rows; events; webhook calls or SET_FIELD)"`
	Context    map[string]any `json:"context,omitempty" jsonschema:"description=Extra values that {{name}} placeholders read"`
}

// executeRuleInput documents POST /business_rules/rules/{id}/execute:
// data is required; entityType defaults to the rule's.
type executeRuleInput struct {
	EntityType string         `json:"entityType" jsonschema:"maxLength=50,description=The entity type (default: the rule's)"`
	EntityID   string         `json:"entityId" jsonschema:"maxLength=255,description=The entity's id (logged and given to the actions)"`
	EventType  string         `json:"eventType" jsonschema:"maxLength=50,description=The event (logged)"`
	Data       map[string]any `json:"data" jsonschema:"required,description=The entity's data the condition reads (any JSON object)"`
	DryRun     bool           `json:"dryRun" jsonschema:"description=Evaluate and plan without side effects (no log rows; events; webhook calls or SET_FIELD)"`
	Context    map[string]any `json:"context,omitempty" jsonschema:"description=Extra values that {{name}} placeholders read"`
}
