// Package action validates business-rule actions and resolves what each
// amounts to. An action is {type, config}; a rule's outcome calls for its
// successActions (the condition held) or its failureActions.
//
// Validate checks a list when a rule is written: the type is one of
// ALLOW_TRANSITION, BLOCK_TRANSITION, LOG, SHOW_ERROR, SHOW_WARNING,
// SHOW_INFO, NOTIFY, SET_FIELD, CALL_WEBHOOK, EMIT_EVENT, and the config
// holds what the type needs:
//
//	ALLOW_TRANSITION, BLOCK_TRANSITION  message (optional)
//	LOG                                 message; level debug|info|warn|error (default info)
//	SHOW_ERROR, SHOW_WARNING, SHOW_INFO message
//	NOTIFY                              message, recipients (an array or a comma-separated
//	                                    text); subject, template optional
//	SET_FIELD                           field, value (null, false, 0 and "" are values)
//	CALL_WEBHOOK                        url (http or https with a valid host, placeholders
//	                                    allowed, or wholly a placeholder); method
//	                                    GET|POST|PUT|PATCH|DELETE (default POST), headers (text
//	                                    values), body
//	EMIT_EVENT                          eventName (or event), dot-separated lowercase segments;
//	                                    payload optional
//
// A CALL_WEBHOOK url whose host has no placeholder is checked by
// netguard.CheckURL: the host is canonicalised (IDNA, trailing dots, any
// inet_aton notation of an IPv4 address), and a numeric host that is no
// IPv4 address is refused. Validate leaves private destinations to the
// connection, which refuses them unless the rules' jobs allow private
// URLs; ValidateWith without Options.AllowPrivateURLs refuses a plainly
// non-public host (an IP literal in any notation, localhost, a
// single-label name, ...) when the rule is written.
//
// Decisions: a required key is checked for presence and kind, not
// truthiness (SET_FIELD accepts value false); EMIT_EVENT reads eventName,
// or event when eventName is absent; at most 50 actions per
// list and 5000 characters per message.
//
// Plan resolves placeholders and returns the outcome an execution reports:
// {type, allowed, message}, {type, level, message}, {type, severity,
// message}, {type, recipients, subject, message, template}, {type, field,
// value}, {type, url, method, headers, body}, {type, event, payload}. It
// has no side effects: the rule engine carries outcomes out (LOG to the
// execution log, SET_FIELD into the data later rules see, NOTIFY and
// EMIT_EVENT as domain events, CALL_WEBHOOK as a durable job), or in a dry
// run only lists them.
//
// Placeholders {{name}} resolve ruleId, ruleName, entityType, entityId,
// eventType, now (UTC ISO timestamp), today (YYYY-MM-DD), data.x paths,
// names of Context.Extra (user.id, tenant.id, …) and bare data keys
// ({{orderId}}, {{total}}). One that resolves to nothing stays as written.
// Numbers become plain decimals, arrays and objects JSON text. A value that
// is wholly one placeholder ("{{data.total}}") keeps the type of what it
// names (a copy, never the data's own map or array).
package action
