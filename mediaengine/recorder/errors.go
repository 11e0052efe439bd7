package recorder

import "errors"

// Errors of the recorder; the engine's control API maps them to its codes.
var (
	// ErrAlreadyRecording: the stream is being recorded already.
	ErrAlreadyRecording = errors.New("recorder: the stream is already being recorded")
	// ErrNotRecording: the stream is not being recorded.
	ErrNotRecording = errors.New("recorder: the stream is not being recorded")
	// ErrBadName: an app or stream name cannot name a directory.
	ErrBadName = errors.New("recorder: the name cannot be used as a directory name")
	// ErrClosed: the recorder was closed.
	ErrClosed = errors.New("recorder: closed")
	// ErrNoFragment: a segment holds no whole fragment to repair to.
	ErrNoFragment = errors.New("recorder: the file holds no whole fragment")
	// ErrFileNotFound: no finished file has the id.
	ErrFileNotFound = errors.New("recorder: no finished recording file with this id")
	// ErrIndex: a sidecar index cannot be read.
	ErrIndex = errors.New("recorder: malformed sidecar index")
	// ErrVolumeFull: the root's volume is below the full watermark, so
	// no new file is started.
	ErrVolumeFull = errors.New("recorder: the recording volume is full")
	// ErrRootUnusable: the root is missing, read-only or another disk
	// (its identity marker is not the one bound), so no new file is
	// started there.
	ErrRootUnusable = errors.New("recorder: the recording root cannot be used")
	// ErrBadFallback: the fallback root is not an absolute, clean path or
	// overlaps the primary.
	ErrBadFallback = errors.New("recorder: unusable fallback root")
)
