package recording

import (
	"errors"
	"net/http"
)

// Error is a recording error with the HTTP status and contract code the
// boundary answers with; messages wrapped around one with %w say exactly
// what was wrong.
type Error struct {
	Status int
	Code   string
	msg    string
}

func (e *Error) Error() string { return e.msg }

// Errors of the recording package.
var (
	ErrInvalid      = &Error{Status: http.StatusBadRequest, Code: "invalid_body", msg: "invalid recording request"}
	ErrInvalidQuery = &Error{Status: http.StatusBadRequest, Code: "invalid_query", msg: "invalid recording query"}
	ErrNotFound     = &Error{Status: http.StatusNotFound, Code: "not_found", msg: "no such recording file"}
	ErrNoSession    = &Error{Status: http.StatusNotFound, Code: "recording_not_active", msg: "the stream is not being recorded"}
	ErrNoChannel    = &Error{Status: http.StatusNotFound, Code: "not_found", msg: "no such channel"}
	ErrNoServer     = &Error{Status: http.StatusConflict, Code: "media_server_required",
		msg: "the stream has no media server: name one, or start the channel first"}
	ErrPlanNotFound    = &Error{Status: http.StatusNotFound, Code: "not_found", msg: "no such recording plan"}
	ErrFileUnavailable = &Error{Status: http.StatusConflict, Code: "recording_file_unavailable", msg: "the recording file cannot be played"}
	ErrContended       = &Error{Status: http.StatusConflict, Code: "conflict", msg: "the recording session is being changed concurrently; try again"}
)

// AsError finds the recording error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
