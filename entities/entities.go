package entities

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// Entity is a custom entity of a tenant or of one of its organizations.
type Entity struct {
	// ID is the row's id (UUIDv7); EntityID the entity's ("module.name").
	ID       string `json:"id"`
	EntityID string `json:"entityId"`
	// Label is 1 to 200 characters, Description at most 2,000.
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
	// LabelField is the field whose value labels a record in relation
	// options ("" for the default: name, title, code or email).
	LabelField string `json:"labelField,omitempty"`
	// DefaultEditor is one of Editors, or "".
	DefaultEditor string `json:"defaultEditor,omitempty"`
	ShowInSidebar bool   `json:"showInSidebar"` // whether the entity is listed in the sidebar
	IsActive      bool   `json:"isActive"`      // false hides it from the sidebar list
	TenantID      string `json:"tenantId"`
	// OrganizationID is the organization whose entity it is, "" for the
	// tenant's own.
	OrganizationID string    `json:"organizationId,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// DeletedAt is set once the entity is deleted (soft delete).
	DeletedAt *time.Time `json:"deletedAt,omitempty"`
}

// EntityInput is an entity as upserted. ShowInSidebar defaults to false,
// IsActive to true.
type EntityInput struct {
	EntityID    string `json:"entityId" jsonschema:"required,maxLength=200,pattern=^[a-z0-9_]+[.:][a-z0-9_]+$"`
	Label       string `json:"label" jsonschema:"required,minLength=1,maxLength=200"`
	Description string `json:"description" jsonschema:"maxLength=2000"`
	// LabelField: see Entity.LabelField.
	LabelField string `json:"labelField" jsonschema:"maxLength=100,pattern=^([a-zA-Z_][a-zA-Z0-9_]*)?$"`
	// DefaultEditor is one of Editors, or "".
	DefaultEditor string `json:"defaultEditor" jsonschema:"enum=,enum=markdown,enum=simpleMarkdown,enum=htmlRichText,enum=plain"`
	ShowInSidebar *bool  `json:"showInSidebar"` // default false
	IsActive      *bool  `json:"isActive"`      // default true
}

// EntitySummary is one entry of ListEntities: a code entity (source
// "code") or a custom one ("custom") with the number of active field
// keys it has for the caller.
type EntitySummary struct {
	EntityID string `json:"entityId"`
	// Source is "code" (RegisterEntity, overridden or not) or "custom".
	Source        string `json:"source" jsonschema:"enum=code,enum=custom"`
	Label         string `json:"label"`
	Description   string `json:"description,omitempty"`
	LabelField    string `json:"labelField,omitempty"`    // see Entity.LabelField
	DefaultEditor string `json:"defaultEditor,omitempty"` // see Entity.DefaultEditor
	ShowInSidebar bool   `json:"showInSidebar"`           // see Entity.ShowInSidebar
	// UpdatedAt is the custom entity's; nil for a code entity not
	// overridden.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	// Count is the number of active field keys the entity has for the
	// caller.
	Count int `json:"count"`

	active bool // a code entity, or an active custom one (the sidebar's)
}

// Scope names of a definition.
const (
	ScopeGlobal       = "global"
	ScopeTenant       = "tenant"
	ScopeOrganization = "organization"
)

// Definition is a custom field definition at one scope.
type Definition struct {
	ID       string `json:"id"`
	EntityID string `json:"entityId"`
	Key      string `json:"key"` // the field key: lowercase letters, digits and _, at most 100
	// Kind is one of Kinds.
	Kind string `json:"kind" jsonschema:"enum=text,enum=multiline,enum=integer,enum=float,enum=boolean,enum=select,enum=currency,enum=relation,enum=attachment,enum=dictionary,enum=phone,enum=date,enum=datetime"`
	// ConfigJSON is the normalised configuration (label, options,
	// filterable, priority, validation, …; see the package comment).
	ConfigJSON map[string]any `json:"configJson"`
	// IsActive false disables the field at this scope, letting a wider
	// scope's definition apply; a tombstone is inactive too.
	IsActive bool `json:"isActive"`
	// Scope is where it is defined: global, tenant or organization.
	Scope string `json:"scope" jsonschema:"enum=global,enum=tenant,enum=organization"`
	// TenantID is "" for a global definition; OrganizationID "" for a
	// global or tenant one.
	TenantID       string    `json:"tenantId,omitempty"`
	OrganizationID string    `json:"organizationId,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// DeletedAt is set on a tombstone: the key is deleted at this scope.
	DeletedAt *time.Time `json:"deletedAt,omitempty"`
	// TombstoneOnly marks a row that exists only as the tombstone of a
	// wider scope's key (deleting it at this scope): restoring the key
	// removes the row. Stores keep it; it is not part of the API.
	TombstoneOnly bool `json:"-"`
}

// Priority is configJson.priority (0 when absent).
func (d *Definition) Priority() float64 {
	p, _ := d.ConfigJSON["priority"].(float64)
	return p
}

// DefinitionInput is a definition as created or updated: entityId, key and
// kind are required; isActive defaults to true.
type DefinitionInput struct {
	EntityID string `json:"entityId"`
	// Key is lowercase letters, digits and _, at most 100 characters.
	Key string `json:"key" jsonschema:"required,maxLength=100,pattern=^[a-z0-9_]+$"`
	// Kind is one of Kinds, or the alias "string" or "enum".
	Kind       string         `json:"kind" jsonschema:"required,enum=text,enum=multiline,enum=integer,enum=float,enum=boolean,enum=select,enum=currency,enum=relation,enum=attachment,enum=dictionary,enum=phone,enum=date,enum=datetime,enum=string,enum=enum"`
	ConfigJSON map[string]any `json:"configJson"` // label, options, filterable, priority, validation, …
	IsActive   *bool          `json:"isActive"`   // default true
}

// FieldSet groups an entity's fields for editors.
type FieldSet struct {
	// Code is lowercase letters, digits, _ and - (at most 100); Label 1 to
	// 255 characters.
	Code  string `json:"code" jsonschema:"required,maxLength=100,pattern=^[a-z0-9_-]+$"`
	Label string `json:"label" jsonschema:"required,minLength=1,maxLength=255"`
	// Icon names an icon for the editor's UI.
	Icon        string          `json:"icon,omitempty" jsonschema:"maxLength=100"`
	Description string          `json:"description,omitempty" jsonschema:"maxLength=2000"`
	Groups      []FieldSetGroup `json:"groups,omitempty"` // the set's groups, in order
}

// FieldSetGroup is a group of a field set.
type FieldSetGroup struct {
	Code  string `json:"code" jsonschema:"required,minLength=1,maxLength=100"` // required, at most 100 characters
	Title string `json:"title,omitempty" jsonschema:"maxLength=200"`
	Hint  string `json:"hint,omitempty" jsonschema:"maxLength=500"` // help text shown under the title
}

// BatchInput replaces an entity's definitions at the caller's scope, in
// order (the order becomes their priority), with optional field sets.
type BatchInput struct {
	EntityID string `json:"entityId" jsonschema:"required,maxLength=200,pattern=^[a-z0-9_]+[.:][a-z0-9_]+$"`
	// Definitions are every definition at the scope, in priority order.
	Definitions []DefinitionInput `json:"definitions" jsonschema:"maxItems=500"`
	// Fieldsets and SingleFieldsetPerRecord replace the entity's settings
	// (nil Fieldsets: none, nil SingleFieldsetPerRecord: false) unless
	// both are nil, which keeps them.
	Fieldsets               []FieldSet `json:"fieldsets" jsonschema:"maxItems=20"`
	SingleFieldsetPerRecord *bool      `json:"singleFieldsetPerRecord"` // see Fieldsets
}

// Settings are an entity's field sets and whether a record uses one.
type Settings struct {
	Fieldsets []FieldSet `json:"fieldsets"` // the entity's field sets, in order
	// SingleFieldsetPerRecord is whether a record uses one field set only.
	SingleFieldsetPerRecord bool `json:"singleFieldsetPerRecord"`
}

// Kinds of custom fields.
var Kinds = []string{"text", "multiline", "integer", "float", "boolean", "select", "currency", "relation", "attachment",
	"dictionary", "phone", "date", "datetime"}

// kindAliases are other accepted names for kinds ("string" and "enum").
var kindAliases = map[string]string{"string": "text", "enum": "select"}

// ValidationRules are the rules configJson.validation may list.
var ValidationRules = []string{"required", "date", "integer", "float", "lt", "lte", "gt", "gte", "eq", "ne", "regex"}

// Editors an entity's defaultEditor may name.
var Editors = []string{"markdown", "simpleMarkdown", "htmlRichText", "plain"}

var (
	entityIDPattern   = regexp.MustCompile(`^[a-z0-9_]+[.:][a-z0-9_]+$`)
	fieldKeyPattern   = regexp.MustCompile(`^[a-z0-9_]+$`)
	labelFieldPattern = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	fieldsetPattern   = regexp.MustCompile(`^[a-z0-9_\-]+$`)
	uuidPattern       = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// NormalizeEntityID returns an entity id in its stored form, "module.name";
// "module:name" is the same entity. ok is false when id is
// not of either form.
func NormalizeEntityID(id string) (string, bool) {
	if len(id) > 200 || !entityIDPattern.MatchString(id) {
		return "", false
	}
	return strings.Replace(id, ":", ".", 1), true
}

const entityIDMessage = "must be module.name (or module:name): lowercase letters, digits and _"

func checkText(v *store.ValidationError, field, s string, minLen, maxLen int) {
	switch n := utf8.RuneCountInString(s); {
	case !store.Storable(s):
		v.Add(field, "must be valid text")
	case n < minLen:
		v.Add(field, "is required")
	case n > maxLen:
		v.Add(field, fmt.Sprintf("must be at most %d characters", maxLen))
	}
}

// normalize checks an entity input and puts its id in stored form.
func (in *EntityInput) normalize() error {
	var v store.ValidationError
	id, ok := NormalizeEntityID(in.EntityID)
	if !ok {
		v.Add("entityId", entityIDMessage)
	}
	in.EntityID = id
	checkText(&v, "label", in.Label, 1, 200)
	checkText(&v, "description", in.Description, 0, 2000)
	if in.LabelField != "" && (len(in.LabelField) > 100 || !labelFieldPattern.MatchString(in.LabelField)) {
		v.Add("labelField", "must be a field name (letters, digits and _, not starting with a digit), at most 100 characters")
	}
	if in.DefaultEditor != "" && !contains(Editors, in.DefaultEditor) {
		v.Add("defaultEditor", "must be one of "+strings.Join(Editors, ", "))
	}
	return v.Err()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// normalize checks a definition input: the entity id (stored form), the
// key, the kind (aliases resolved) and the configuration, which it
// normalises: label defaults to the key, formEditable and listVisible to
// true, a currency field's options come from the currencies list, a
// multiline field's editor defaults to markdown, and defaultValue is
// checked against the kind.
func (in *DefinitionInput) normalize(prefix string) *store.ValidationError {
	var v store.ValidationError
	if prefix == "" {
		id, ok := NormalizeEntityID(in.EntityID)
		if !ok {
			v.Add("entityId", entityIDMessage)
		}
		in.EntityID = id
	}
	if in.Key == "" {
		v.Add(prefix+"key", "is required")
	} else if len(in.Key) > 100 || !fieldKeyPattern.MatchString(in.Key) {
		v.Add(prefix+"key", "must be snake_case: lowercase letters, digits and _, at most 100 characters")
	} else if reservedKeys[in.Key] {
		v.Add(prefix+"key", "is reserved for the record's own columns")
	}
	if k, ok := kindAliases[in.Kind]; ok {
		in.Kind = k
	}
	if in.Kind == "" {
		v.Add(prefix+"kind", "is required")
	} else if !contains(Kinds, in.Kind) {
		v.Add(prefix+"kind", "must be one of "+strings.Join(Kinds, ", "))
	}
	cfg := in.ConfigJSON
	if cfg == nil {
		cfg = map[string]any{}
	}
	// Round-trip through JSON so that numbers are float64 and the value
	// is what will be stored.
	if path := badText(cfg, prefix+"configJson"); path != "" {
		v.Add(path, "must be valid text")
		return &v
	}
	b, err := json.Marshal(cfg)
	if err != nil || store.JSONHasNUL(b) {
		v.Add(prefix+"configJson", "must be a JSON object of storable values")
		return &v
	}
	cfg = map[string]any{}
	_ = json.Unmarshal(b, &cfg)
	checkConfig(&v, prefix+"configJson", in.Kind, cfg)
	if _, ok := cfg["label"]; !ok && in.Key != "" {
		cfg["label"] = in.Key
	}
	for _, k := range []string{"formEditable", "listVisible"} {
		if _, ok := cfg[k]; !ok {
			cfg[k] = true
		}
	}
	switch in.Kind {
	case "currency":
		cfg["optionsUrl"] = "/api/currencies/currencies/options"
		delete(cfg, "options")
	case "multiline":
		if _, ok := cfg["editor"]; !ok {
			cfg["editor"] = "markdown"
		}
	}
	in.ConfigJSON = cfg
	return &v
}

// checkConfig checks the configJson keys the service knows; others pass
// through untouched.
func checkConfig(v *store.ValidationError, field, kind string, cfg map[string]any) {
	str := func(key string, max int) {
		if x, ok := cfg[key]; ok {
			if s, isStr := x.(string); !isStr || utf8.RuneCountInString(s) > max {
				v.Add(field+"."+key, fmt.Sprintf("must be text of at most %d characters", max))
			}
		}
	}
	boolean := func(key string) {
		if x, ok := cfg[key]; ok {
			if _, isBool := x.(bool); !isBool {
				v.Add(field+"."+key, "must be true or false")
			}
		}
	}
	str("label", 200)
	str("description", 2000)
	str("editor", 100)
	str("input", 100)
	str("relatedEntityId", 200)
	for _, k := range []string{"multi", "filterable", "formEditable", "listVisible", "encrypted", "dictionaryInlineCreate"} {
		boolean(k)
	}
	if x, ok := cfg["priority"]; ok {
		if f, isNum := x.(float64); !isNum || math.IsInf(f, 0) {
			v.Add(field+".priority", "must be a number")
		}
	}
	if x, ok := cfg["options"]; ok {
		list, isList := x.([]any)
		if !isList {
			v.Add(field+".options", "must be a list of strings or numbers")
		}
		for _, o := range list {
			switch o.(type) {
			case string, float64:
			default:
				v.Add(field+".options", "must be a list of strings or numbers")
			}
		}
	}
	if x, ok := cfg["optionsUrl"]; ok {
		if s, isStr := x.(string); !isStr || s == "" || len(s) > 2000 {
			v.Add(field+".optionsUrl", "must be a URL")
		}
	}
	if x, ok := cfg["fieldset"]; ok {
		if s, isStr := x.(string); !isStr || !fieldsetPattern.MatchString(s) || len(s) > 100 {
			v.Add(field+".fieldset", "must be a field set code: lowercase letters, digits, _ and -")
		}
	}
	if x, ok := cfg["group"]; ok {
		g, isObj := x.(map[string]any)
		code, _ := g["code"].(string)
		title, _ := g["title"].(string)
		hint, _ := g["hint"].(string)
		if !isObj || code == "" || utf8.RuneCountInString(title) > 200 || utf8.RuneCountInString(hint) > 500 {
			v.Add(field+".group", "must be {code, title (at most 200 characters), hint (at most 500)}")
		}
	}
	if x, ok := cfg["dictionaryId"]; ok {
		if s, isStr := x.(string); !isStr || !uuidPattern.MatchString(s) {
			v.Add(field+".dictionaryId", "must be a UUID")
		}
	} else if kind == "dictionary" {
		v.Add(field+".dictionaryId", "is required for dictionary custom fields")
	}
	if x, ok := cfg["validation"]; ok {
		checkValidationRules(v, field+".validation", x)
	}
	if x, ok := cfg["defaultValue"]; ok && x != nil {
		if msg := checkDefault(kind, x, cfg["options"]); msg != "" {
			v.Add(field+".defaultValue", msg)
		}
	}
}

// checkValidationRules checks configJson.validation: at most 32 rules
// {rule, message, param?}; lt, lte, gt and gte need a numeric param, eq
// and ne any param, regex a pattern that compiles (at most 500
// characters).
func checkValidationRules(v *store.ValidationError, field string, x any) {
	list, ok := x.([]any)
	if !ok || len(list) > 32 {
		v.Add(field, "must be a list of at most 32 rules")
		return
	}
	for i, item := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		r, ok := item.(map[string]any)
		if !ok {
			v.Add(f, "must be {rule, message, param?}")
			continue
		}
		name, _ := r["rule"].(string)
		if !contains(ValidationRules, name) {
			v.Add(f+".rule", "must be one of "+strings.Join(ValidationRules, ", "))
			continue
		}
		if msg, ok := r["message"]; ok {
			if _, isStr := msg.(string); !isStr {
				v.Add(f+".message", "must be text")
			}
		}
		param, hasParam := r["param"]
		switch name {
		case "lt", "lte", "gt", "gte":
			if _, isNum := param.(float64); !isNum {
				v.Add(f+".param", "must be a number")
			}
		case "eq", "ne":
			if !hasParam {
				v.Add(f+".param", "is required")
			}
		case "regex":
			s, isStr := param.(string)
			if !isStr || s == "" || len(s) > 500 {
				v.Add(f+".param", "must be a pattern of at most 500 characters")
			} else if _, err := regexp.Compile(s); err != nil {
				v.Add(f+".param", "must be a valid regular expression")
			}
		}
	}
}

// checkDefault checks a defaultValue against its field's kind, returning
// a message or "".
func checkDefault(kind string, x any, options any) string {
	switch kind {
	case "boolean":
		if _, ok := x.(bool); !ok {
			return "must be true or false for a boolean field"
		}
	case "integer":
		if f, ok := x.(float64); !ok || f != math.Trunc(f) {
			return "must be a whole number for an integer field"
		}
	case "float", "currency":
		if _, ok := x.(float64); !ok {
			return "must be a number"
		}
	case "text", "multiline", "phone", "date", "datetime":
		if _, ok := x.(string); !ok {
			return "must be text"
		}
	case "select":
		switch x.(type) {
		case string, float64:
		default:
			return "must be text or a number"
		}
		if list, ok := options.([]any); ok && len(list) > 0 && !containsValue(list, x) {
			return "must be one of the options"
		}
	case "relation", "attachment", "dictionary":
		return "is not supported for " + kind + " fields"
	}
	return ""
}

func containsValue(list []any, x any) bool {
	for _, o := range list {
		if o == x {
			return true
		}
	}
	return false
}

// checkFieldsets checks a batch's field sets: at most 20, each with a
// code, a label of 1 to 255 characters, an icon of at most 100, a
// description of at most 2000, groups with codes.
func checkFieldsets(v *store.ValidationError, sets []FieldSet) {
	if len(sets) > 20 {
		v.Add("fieldsets", "must have at most 20 field sets")
		return
	}
	for i, fs := range sets {
		f := fmt.Sprintf("fieldsets[%d]", i)
		if !fieldsetPattern.MatchString(fs.Code) || len(fs.Code) > 100 {
			v.Add(f+".code", "must be lowercase letters, digits, _ and -")
		}
		checkText(v, f+".label", fs.Label, 1, 255)
		checkText(v, f+".icon", fs.Icon, 0, 100)
		checkText(v, f+".description", fs.Description, 0, 2000)
		for j, g := range fs.Groups {
			if g.Code == "" || !store.Storable(g.Code) || len(g.Code) > 100 {
				v.Add(fmt.Sprintf("%s.groups[%d].code", f, j), "is required")
			}
			checkText(v, fmt.Sprintf("%s.groups[%d].title", f, j), g.Title, 0, 200)
			checkText(v, fmt.Sprintf("%s.groups[%d].hint", f, j), g.Hint, 0, 500)
		}
	}
}

// badText returns the path (under path) of the first string or object
// key of a decoded JSON value that is not valid UTF-8 or holds NUL, or "":
// encoding/json would quietly replace bad bytes when storing it.
func badText(x any, path string) string {
	switch v := x.(type) {
	case string:
		if !store.Storable(v) {
			return path
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if !store.Storable(k) {
				return path
			}
			if p := badText(v[k], path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range v {
			if p := badText(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}
