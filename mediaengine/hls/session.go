package hls

import (
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/player"
)

// session is one HLS viewer: the player it is listed as and when it last
// asked for anything.
type session struct {
	id       string
	path     media.Path
	seg      *Segmenter
	player   *player.Player
	lastSeen time.Time // guarded by Manager.mu
}
