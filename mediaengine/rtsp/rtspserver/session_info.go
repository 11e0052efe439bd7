package rtspserver

import "time"

// SessionInfo describes a session for listings.
type SessionInfo struct {
	ID         SessionID
	Path       string
	Publishing bool
	Transport  string // "tcp" or "udp"
	ClientAddr string
	User       string
	StartedAt  time.Time
	Bytes      uint64 // RTP bytes received (publish) or sent (play)
	// Publish: RTP packets lost on the way in, and frames dropped (not
	// published because a loss damaged them, or before the first
	// keyframe).
	LostPackets   uint64
	DroppedFrames uint64
}
