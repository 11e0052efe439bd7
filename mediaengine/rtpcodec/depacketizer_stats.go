package rtpcodec

import "sync/atomic"

// DepacketizerStats counts what a depacketiser did with its packets. The
// fields are atomic so a control API may read them while the input runs.
type DepacketizerStats struct {
	Packets atomic.Uint64
	Frames  atomic.Uint64
	// Lost counts packets missing from the sequence (a gap in sequence
	// numbers as the depacketiser saw them).
	Lost atomic.Uint64
	// Malformed counts packets whose payload broke its RFC.
	Malformed atomic.Uint64
	// Dropped counts access units not published: incomplete after a loss,
	// too large, or before the first keyframe.
	Dropped atomic.Uint64
}

// DepacketizerCounts is a copy of DepacketizerStats at one moment.
type DepacketizerCounts struct {
	Packets, Frames, Lost, Malformed, Dropped uint64
}

// Snapshot copies the counters.
func (s *DepacketizerStats) Snapshot() DepacketizerCounts {
	return DepacketizerCounts{
		Packets:   s.Packets.Load(),
		Frames:    s.Frames.Load(),
		Lost:      s.Lost.Load(),
		Malformed: s.Malformed.Load(),
		Dropped:   s.Dropped.Load(),
	}
}
