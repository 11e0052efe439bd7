package events

import "github.com/svcplatform/svc/controlplane/fault"

// Sentinel errors of the events package; the HTTP boundary maps them to
// contract codes (ErrInvalid -> 400 invalid_body or invalid_query,
// ErrNotFound -> 404 not_found).
var (
	// ErrInvalid marks input from the network that cannot be stored: a bad
	// hook name, a body that is not a JSON object, an oversized body or a
	// malformed cursor.
	ErrInvalid = fault.New(fault.Invalid, "invalid_body", "invalid event input")
	// ErrNotFound means the outbox has no event with that id.
	ErrNotFound = fault.New(fault.NotFound, "not_found", "no such event")
)
