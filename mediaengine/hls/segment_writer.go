package hls

import "github.com/svcplatform/svc/mediaengine/media"

// segmentWriter muxes frames into segments of one container format.
type segmentWriter interface {
	// write adds f; when cut is set, the segment in progress is finished
	// first (before f, a keyframe) and returned.
	write(f *media.Frame, cut bool) (finished []byte)
	// init is the initialisation segment (fMP4), nil for TS.
	init() []byte
	// ext is the segment file extension.
	ext() string
}
