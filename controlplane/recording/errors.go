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
	ErrNoRecordings    = fault.New(fault.NotFound, "not_found", "no recorded files intersect the range")
	ErrTaskNotFound    = fault.New(fault.NotFound, "not_found", "no such cut/merge task")
	ErrTaskBusy        = fault.New(fault.Conflict, "conflict", "the cut/merge task has not ended")
	// ErrOutputUnavailable: a task's output is asked for before the task
	// succeeded or after its output was deleted.
	ErrOutputUnavailable = fault.New(fault.Conflict, "cut_merge_output_unavailable", "the cut/merge output is not available")
	// Refusals of the directory browser.
	ErrPathOutsideRoot = fault.New(fault.Invalid, "recording_path_outside_root",
		"the path leads outside the recording root (absolute, .. or a symlink out of it)")
	ErrPathInvalid      = fault.New(fault.Invalid, "recording_path_invalid", "the path is not a usable directory name")
	ErrPathNotFound     = fault.New(fault.NotFound, "recording_path_not_found", "no such directory under the recording root")
	ErrPathNotDirectory = fault.New(fault.Conflict, "recording_path_not_directory", "the path names a file, not a directory")
	ErrEngine           = fault.NewRetryable(fault.Unavailable, "agent_unavailable", "the media server could not be asked")
)

var refusals = []error{ErrInvalid, ErrInvalidQuery, ErrNotFound, ErrNoSession, ErrNoChannel, ErrNoServer, ErrPlanNotFound,
	ErrFileUnavailable, ErrContended, ErrNoRecordings, ErrTaskNotFound, ErrTaskBusy, ErrOutputUnavailable,
	ErrPathOutsideRoot, ErrPathInvalid, ErrPathNotFound, ErrPathNotDirectory}

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
