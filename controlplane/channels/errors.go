package channels

import "github.com/svcplatform/svc/controlplane/fault"

// Errors of the catalogue. The HTTP boundary maps each to its status and
// contract code (named in the comment); messages wrapped around them with %w
// say exactly what was wrong and never repeat a source credential.
var (
	// ErrInvalid: 400 invalid_body.
	ErrInvalid = fault.New(fault.Invalid, "invalid_body", "invalid channel request")
	// ErrNotFound: 404 not_found.
	ErrNotFound = fault.New(fault.NotFound, "not_found", "no such channel")
	// ErrGroupNotFound: 404 not_found (400 invalid_body when a channel names it).
	ErrGroupNotFound = fault.New(fault.NotFound, "not_found", "no such channel group")
	// ErrCommandNotFound: 404 not_found.
	ErrCommandNotFound = fault.New(fault.NotFound, "not_found", "no such stream command")
	// ErrDuplicateStream: 409 channel_stream_conflict.
	ErrDuplicateStream = fault.New(fault.Conflict, "channel_stream_conflict", "another channel already uses this vhost/app/stream")
	// ErrDuplicateGroup: 409 channel_group_conflict.
	ErrDuplicateGroup = fault.New(fault.Conflict, "channel_group_conflict", "a channel group with this key already exists")
	// ErrGroupNotEmpty: 409 channel_group_not_empty.
	ErrGroupNotEmpty = fault.New(fault.Conflict, "channel_group_not_empty", "the channel group still has channels")
	// ErrPending: 409 channel_pending_activation.
	ErrPending = fault.New(fault.Conflict, "channel_pending_activation", "the channel is in the pending-activation pool")
	// ErrNotPending: 409 channel_not_pending.
	ErrNotPending = fault.New(fault.Conflict, "channel_not_pending", "the channel is not in the pending-activation pool")
	// ErrDisabled: 409 channel_disabled.
	ErrDisabled = fault.New(fault.Conflict, "channel_disabled", "the channel is disabled")
	// ErrRunning: 409 channel_running.
	ErrRunning = fault.New(fault.Conflict, "channel_running", "the channel is running")
	// ErrCommandFinished: 409 stream_command_finished.
	ErrCommandFinished = fault.New(fault.Conflict, "stream_command_finished", "the stream command already finished")
	// ErrBadTransition: 409 conflict.
	ErrBadTransition = fault.New(fault.Conflict, "conflict", "state transition not allowed")
	// ErrPTZNotSupported: 409 ptz_not_supported.
	ErrPTZNotSupported = fault.New(fault.Conflict, "ptz_not_supported", "PTZ is not supported for this protocol")
	// ErrPTZUnavailable: 409 ptz_unavailable.
	ErrPTZUnavailable = fault.New(fault.Conflict, "ptz_unavailable", "PTZ control for this protocol is not available yet")
	// ErrContended: 409 conflict, retryable.
	ErrContended = fault.NewRetryable(fault.Conflict, "conflict", "the channel is being changed concurrently; try again")
)
