package rooms

import "errors"

// Errors of the domain; the HTTP boundary maps each to its status and code.
var (
	// ErrInvalid is a request the contract does not allow (400).
	ErrInvalid = errors.New("rooms: invalid request")
	// ErrNotFound is an unknown room, or one the caller does not own (404).
	ErrNotFound = errors.New("rooms: no such room")
	// ErrRoomClosed refuses joins and tickets of a closed room (409).
	ErrRoomClosed = errors.New("rooms: the room is closed")
	// ErrTicketInvalid is an access ticket that is unknown, for another
	// room, or expired (401).
	ErrTicketInvalid = errors.New("rooms: the access ticket is not valid for this room")
	// ErrTicketConsumed is an access ticket another join used first (401).
	ErrTicketConsumed = errors.New("rooms: the access ticket was already used")
	// ErrTokenInvalid is a participant token that is unknown, rotated
	// (tokenVersion), or of a participant who left or timed out (401).
	ErrTokenInvalid = errors.New("rooms: the participant token is not valid")
	// ErrIdempotencyConflict is an idempotencyKey reused with another
	// request (409).
	ErrIdempotencyConflict = errors.New("rooms: the idempotencyKey was used for another request")
)
