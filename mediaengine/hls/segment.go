package hls

import "time"

// segment is one finished media segment.
type segment struct {
	seq      uint64
	data     []byte
	duration time.Duration
	// gen is the publisher generation: a change starts a discontinuity and,
	// for fMP4, a new initialisation segment.
	gen           int
	discontinuity bool
	// disc counts the discontinuities up to and including this segment,
	// for EXT-X-DISCONTINUITY-SEQUENCE.
	disc uint64
}
