package rooms

import "github.com/svcplatform/svc/controlplane/fault"

// Errors of the domain; the HTTP boundary maps each to its status and code.
var (
	// ErrInvalid is a request the contract does not allow (400).
	ErrInvalid = fault.New(fault.Invalid, "invalid_body", "rooms: invalid request")
	// ErrNotFound is an unknown room, or one the caller does not own (404).
	ErrNotFound = fault.New(fault.NotFound, "not_found", "rooms: no such room")
	// ErrRoomClosed refuses joins and tickets of a closed room (409).
	ErrRoomClosed = fault.New(fault.Conflict, "room_closed", "rooms: the room is closed")
	// ErrTicketInvalid is an access ticket that is unknown, for another
	// room, or expired (401).
	ErrTicketInvalid = fault.New(fault.Unauthenticated, "room_ticket_invalid", "rooms: the access ticket is not valid for this room")
	// ErrTicketConsumed is an access ticket another join used first (401).
	ErrTicketConsumed = fault.New(fault.Unauthenticated, "room_ticket_consumed", "rooms: the access ticket was already used")
	// ErrTokenInvalid is a participant token that is unknown, rotated
	// (tokenVersion), or of a participant who left or timed out (401).
	ErrTokenInvalid = fault.New(fault.Unauthenticated, "rtc_token_invalid", "rooms: the participant token is not valid")
	// ErrIdempotencyConflict is an idempotencyKey reused with another
	// request (409).
	ErrIdempotencyConflict = fault.New(fault.Conflict, "idempotency_conflict", "rooms: the idempotencyKey was used for another request")
)

// Errors of publications, subscriptions and the media relay.
var (
	// ErrForbidden is a participant acting beyond its role, capabilities
	// or admission, or on another device's publication or subscription
	// (403).
	ErrForbidden = fault.New(fault.Forbidden, "permission_denied", "rooms: the participant may not do this")
	// ErrPublicationNotActive refuses a subscription to a publication that
	// is not Active (409).
	ErrPublicationNotActive = fault.New(fault.Conflict, "publication_not_active", "rooms: the publication is not active")
	// ErrPublicationState refuses a WHIP offer to a publication that
	// already carries media or has ended (409).
	ErrPublicationState = fault.New(fault.Conflict, "conflict", "rooms: the publication is not waiting for media")
	// ErrSDPRefused is an SDP offer or trickle fragment the media server
	// cannot use (400).
	ErrSDPRefused = fault.New(fault.Invalid, "invalid_sdp", "rooms: the media server refused the SDP")
	// ErrMediaUnavailable is a media server that cannot be reached or has
	// no room for another session (503).
	ErrMediaUnavailable = fault.NewRetryable(fault.Unavailable, "unavailable", "rooms: the room's media server is not available")
)
