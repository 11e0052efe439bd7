package recording

import (
	"errors"

	"github.com/svcplatform/svc/controlplane/fault"
)

// Errors of the recording package; messages wrapped around one with %w say
// exactly what was wrong.
var (
	ErrInvalid      = fault.New(fault.Invalid, "invalid_body", "invalid recording request")
	ErrInvalidQuery = fault.New(fault.Invalid, "invalid_query", "invalid recording query")
	ErrNotFound     = fault.New(fault.NotFound, "not_found", "no such recording file")
	ErrNoSession    = fault.New(fault.NotFound, "recording_not_active", "the stream is not being recorded")
	ErrNoChannel    = fault.New(fault.NotFound, "not_found", "no such channel")
	ErrNoServer     = fault.New(fault.Conflict, "media_server_required",
		"the stream has no media server: name one, or start the channel first")
	ErrPlanNotFound    = fault.New(fault.NotFound, "not_found", "no such recording plan")
	ErrFileUnavailable = fault.New(fault.Conflict, "recording_file_unavailable", "the recording file cannot be played")
	ErrContended       = fault.NewRetryable(fault.Conflict, "conflict", "the recording session is being changed concurrently; try again")
)

var refusals = []error{ErrInvalid, ErrInvalidQuery, ErrNotFound, ErrNoSession, ErrNoChannel, ErrNoServer, ErrPlanNotFound,
	ErrFileUnavailable, ErrContended}

// IsRefusal reports whether err is one of this package's refusals (a
// request it will not carry out), as opposed to a failure of the store or
// of a media server.
func IsRefusal(err error) bool {
	for _, r := range refusals {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}
