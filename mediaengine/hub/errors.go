package hub

import "errors"

// Errors of the hub. Callers map them to protocol answers (HTTP 404/409,
// RTSP 404/455).
var (
	ErrAlreadyPublishing = errors.New("hub: the stream already has a publisher")
	ErrStreamNotFound    = errors.New("hub: no such stream")
	ErrStreamClosed      = errors.New("hub: the stream ended")
	ErrReaderClosed      = errors.New("hub: the reader was closed")
	ErrHubClosed         = errors.New("hub: closed")
	ErrNoTracks          = errors.New("hub: a stream needs at least one track")
	// ErrNoCarriedTrack is what a Format's NewMuxer error matches when the
	// format has no way to carry any of the stream's tracks (FLV of a VP8 +
	// Opus stream): not a passing state, so players are told it is the
	// codecs.
	ErrNoCarriedTrack = errors.New("hub: the format carries none of the stream's tracks")
)

// ErrUnknownTrack is returned for a frame whose Track is not one of the
// stream's.
var ErrUnknownTrack = errors.New("hub: the frame's track is not one of the stream's tracks")
