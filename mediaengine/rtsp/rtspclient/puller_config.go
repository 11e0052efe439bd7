package rtspclient

import (
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
)

// PullerConfig configures a Puller.
type PullerConfig struct {
	// URL is the source, credentials in its user info
	// (rtsp://user:pass@camera/stream).
	URL    string
	Client Config
	// MinBackoff and MaxBackoff bound the wait between attempts; it
	// doubles per failed attempt (with ±20% jitter) and starts over after
	// a session that delivered frames (defaults 1 s and 30 s).
	MinBackoff, MaxBackoff time.Duration
	// OnTracks is called at the start of every session, once the tracks
	// are known and before the first frame: each session brings new
	// Track values.
	OnTracks func(tracks []*media.Track)
	// OnFrame receives every frame, from one goroutine at a time.
	OnFrame func(f *media.Frame)
	// OnState is called on every state change, with the error that caused
	// a wait.
	OnState func(state PullerState, err error)
	Log     *zap.Logger
}
