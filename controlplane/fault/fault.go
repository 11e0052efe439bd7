// Package fault gives the control plane's errors their meaning once, where
// they are declared: a kind (what went wrong, which the HTTP boundary turns
// into a status), the contract's error code and whether repeating the
// request may succeed. A domain declares its sentinels with New and wraps
// them with detail (fmt.Errorf("%w: ...", ErrInvalid)); the boundary finds
// the nearest coded error in the chain, so no error is left for someone to
// remember to map.
package fault

import "errors"

// Kind is the class of a failure.
type Kind uint8

// Kinds. Append only.
const (
	// Internal is a failure of the platform itself (500): its text is not
	// shown to the caller.
	Internal Kind = iota
	// Invalid: the request is malformed or breaks a rule (400).
	Invalid
	// Unauthenticated: no valid credential (401).
	Unauthenticated
	// Forbidden: the caller may not do this (403).
	Forbidden
	// NotFound: what the request names does not exist (404).
	NotFound
	// Conflict: the state does not allow it now (409).
	Conflict
	// TooLarge: the request is over a size limit (413).
	TooLarge
	// RateLimited: too many requests (429).
	RateLimited
	// Unavailable: a dependency or the cluster cannot answer now (503).
	Unavailable
	// StorageFull: the store refuses writes until space is freed (507).
	StorageFull
	// BadGateway: a device or peer the platform asked refused or answered
	// with something unusable (502).
	BadGateway
	// GatewayTimeout: a device or peer the platform asked did not answer
	// in time (504).
	GatewayTimeout
)

var kindNames = [...]string{"internal", "invalid", "unauthenticated", "forbidden", "not_found", "conflict", "too_large", "rate_limited",
	"unavailable", "storage_full", "bad_gateway", "gateway_timeout"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Coded is an error that carries its meaning. Sentinels made by New are
// Coded; a type such as an agent's command error can be too.
type Coded interface {
	error
	Kind() Kind
	// ErrorCode is the contract's error code (an ErrorCode of
	// api/openapi.yaml).
	ErrorCode() string
	// Retryable reports whether the same request may succeed later.
	Retryable() bool
}

// Error is a sentinel with its meaning.
type Error struct {
	kind      Kind
	code      string
	retryable bool
	text      string
}

// New declares a sentinel that repeating will not fix.
func New(kind Kind, code, text string) *Error { return &Error{kind: kind, code: code, text: text} }

// NewRetryable declares a sentinel that may clear by itself.
func NewRetryable(kind Kind, code, text string) *Error {
	return &Error{kind: kind, code: code, retryable: true, text: text}
}

func (e *Error) Error() string     { return e.text }
func (e *Error) Kind() Kind        { return e.kind }
func (e *Error) ErrorCode() string { return e.code }
func (e *Error) Retryable() bool   { return e.retryable }

// Of finds the nearest coded error in err's chain.
func Of(err error) (Coded, bool) {
	var c Coded
	if errors.As(err, &c) {
		return c, true
	}
	return nil, false
}

// Detailer is an error with machine-readable facts for the caller (such as
// the captcha a login must answer next).
type Detailer interface {
	Details() map[string]string
}
