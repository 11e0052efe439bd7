package channels

import "errors"

// Errors of the catalogue. The HTTP boundary maps each to its status and
// contract code (named in the comment); messages wrapped around them with %w
// say exactly what was wrong and never repeat a source credential.
var (
	// ErrInvalid: 400 invalid_body.
	ErrInvalid = errors.New("invalid channel request")
	// ErrNotFound: 404 not_found.
	ErrNotFound = errors.New("no such channel")
	// ErrGroupNotFound: 404 not_found (400 invalid_body when a channel names it).
	ErrGroupNotFound = errors.New("no such channel group")
	// ErrCommandNotFound: 404 not_found.
	ErrCommandNotFound = errors.New("no such stream command")
	// ErrDuplicateStream: 409 channel_stream_conflict.
	ErrDuplicateStream = errors.New("another channel already uses this vhost/app/stream")
	// ErrDuplicateGroup: 409 channel_group_conflict.
	ErrDuplicateGroup = errors.New("a channel group with this key already exists")
	// ErrGroupNotEmpty: 409 channel_group_not_empty.
	ErrGroupNotEmpty = errors.New("the channel group still has channels")
	// ErrPending: 409 channel_pending_activation.
	ErrPending = errors.New("the channel is in the pending-activation pool")
	// ErrNotPending: 409 channel_not_pending.
	ErrNotPending = errors.New("the channel is not in the pending-activation pool")
	// ErrDisabled: 409 channel_disabled.
	ErrDisabled = errors.New("the channel is disabled")
	// ErrRunning: 409 channel_running.
	ErrRunning = errors.New("the channel is running")
	// ErrCommandFinished: 409 stream_command_finished.
	ErrCommandFinished = errors.New("the stream command already finished")
	// ErrBadTransition: 409 conflict.
	ErrBadTransition = errors.New("state transition not allowed")
	// ErrPTZNotSupported: 409 ptz_not_supported.
	ErrPTZNotSupported = errors.New("PTZ is not supported for this protocol")
	// ErrPTZUnavailable: 409 ptz_unavailable.
	ErrPTZUnavailable = errors.New("PTZ control for this protocol is not available yet")
	// ErrContended: 409 conflict, retryable.
	ErrContended = errors.New("the channel is being changed concurrently; try again")
)
