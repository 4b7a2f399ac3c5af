package payments

import "fmt"

// Status is a payment's unified status, whichever the provider.
type Status string

// The unified statuses.
const (
	StatusPending           Status = "pending"
	StatusAuthorized        Status = "authorized"
	StatusCaptured          Status = "captured"
	StatusPartiallyCaptured Status = "partially_captured"
	StatusRefunded          Status = "refunded"
	StatusPartiallyRefunded Status = "partially_refunded"
	StatusCancelled         Status = "cancelled"
	StatusFailed            Status = "failed"
	StatusExpired           Status = "expired"
	StatusUnknown           Status = "unknown"
)

// Statuses lists every unified status, for filters and catalogues.
var Statuses = []Status{StatusPending, StatusAuthorized, StatusCaptured, StatusPartiallyCaptured, StatusRefunded,
	StatusPartiallyRefunded, StatusCancelled, StatusFailed, StatusExpired, StatusUnknown}

// Valid reports whether s is one of the unified statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// transitions is the status machine: the statuses each status may move
// to. A status absent from the map (refunded, cancelled, failed, expired,
// unknown) moves nowhere.
var transitions = map[Status][]Status{
	StatusPending:           {StatusAuthorized, StatusCaptured, StatusFailed, StatusExpired, StatusCancelled},
	StatusAuthorized:        {StatusCaptured, StatusPartiallyCaptured, StatusCancelled, StatusFailed},
	StatusCaptured:          {StatusRefunded, StatusPartiallyRefunded},
	StatusPartiallyCaptured: {StatusCaptured, StatusRefunded, StatusPartiallyRefunded, StatusCancelled},
	StatusPartiallyRefunded: {StatusRefunded},
}

// Terminal reports whether no status follows s: refunded, cancelled,
// failed and expired.
func (s Status) Terminal() bool {
	switch s {
	case StatusRefunded, StatusCancelled, StatusFailed, StatusExpired:
		return true
	}
	return false
}

// CanMove reports whether a payment in status from may move to status to.
// Staying in a status is not a move.
func CanMove(from, to Status) bool {
	for _, next := range transitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// Action is a caller's operation on a payment.
type Action string

// The manual actions.
const (
	ActionCapture Action = "capture"
	ActionRefund  Action = "refund"
	ActionCancel  Action = "cancel"
)

// actionTargets are the statuses each action leads to.
var actionTargets = map[Action][]Status{
	ActionCapture: {StatusCaptured, StatusPartiallyCaptured},
	ActionRefund:  {StatusRefunded, StatusPartiallyRefunded},
	ActionCancel:  {StatusCancelled},
}

// Allows reports whether action may act on a payment in status from: the
// status is one of the action's targets already (a repeated capture) or
// can move to one. A refunded payment allows no refund. A caller cancels
// only before any capture (pending, authorized): the machine's
// partially_captured → cancelled is a provider's to report, as a cancel
// would strand the captured part, which no refund could then return.
func Allows(from Status, action Action) bool {
	if from.Terminal() {
		return false
	}
	if action == ActionCancel {
		return from == StatusPending || from == StatusAuthorized
	}
	for _, target := range actionTargets[action] {
		if from == target || CanMove(from, target) {
			return true
		}
	}
	return false
}

// StatusConflictError is an action refused in the payment's status.
type StatusConflictError struct {
	Action Action // the refused action
	Status Status // the payment's status
}

// Error names the refused action and the payment's status.
func (e *StatusConflictError) Error() string {
	return fmt.Sprintf("Cannot %s a payment in status %q", e.Action, e.Status)
}

// Decide is the one function that decides a status change, whatever
// caused it (a caller's action, a provider's answer, a webhook): it
// returns the status a payment in current takes when next is reported, and
// whether that is a change. An invalid move (a late "authorized" after
// "captured", anything after a terminal status, unknown) changes nothing.
func Decide(current, next Status) (Status, bool) {
	if next == current || !CanMove(current, next) {
		return current, false
	}
	return next, true
}

// Capture methods of a session.
const (
	CaptureAutomatic = "automatic"
	CaptureManual    = "manual"
)
