package hooks

import "errors"

// Errors of hook calls.
var (
	ErrStatus  = errors.New("hooks: the control plane answered with an error status")
	ErrAnswer  = errors.New("hooks: the control plane's answer is not a hook answer")
	ErrTimeout = errors.New("hooks: no answer within hooks.timeout")
	ErrClosed  = errors.New("hooks: client closed")
	// ErrDisabled: no hook URL is configured.
	ErrDisabled = errors.New("hooks: no hook URL configured")
)
