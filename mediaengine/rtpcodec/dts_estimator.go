package rtpcodec

import "time"

// DTSEstimator derives decoding timestamps for H.264/H.265, where RTP
// carries only presentation time and B-frames arrive out of presentation
// order.
//
// Why a reorder window and not the POC from the slice header: computing
// POC needs the SPS and PPS fields (pic_order_cnt_type, frame number
// widths, ...) and a slice-header parse per frame — a bitstream parser that
// is mediaengine/codec's concern — and it still gives only the order, not
// the timing, so a reorder window is needed anyway. The window gives both
// from presentation times alone:
//
// In a stream whose reorder depth is D (a frame is decoded at most D frames
// before it is presented), the n-th decoding timestamp is the (n-D)-th
// smallest presentation timestamp. Keeping the last D+1 PTS values sorted
// and taking the smallest as DTS yields DTS that are monotonic, spaced like
// the presentation times, never later than their frame's PTS, and equal to
// PTS when there are no B-frames (D = 0). It adds no latency once D is
// known.
//
// D is learned: for each frame, the number of recent frames with a larger
// PTS. The depacketiser primes the estimator with the first few frames of
// the stream before releasing them (a one-time delay of about five frames),
// so D is right from the first frame for common encoder settings; a deeper
// reordering seen later grows D, and the one frame affected gets a DTS one
// tick after its predecessor instead of going backwards.
type DTSEstimator struct {
	tick    time.Duration // the smallest DTS increment (one RTP tick)
	depth   int
	step    time.Duration // smallest PTS spacing seen: the frame duration
	window  []time.Duration
	history [16]time.Duration
	hn, hi  int
	last    time.Duration
	started bool
	// primedMin is the earliest presentation time among the primed
	// frames: leading pictures of an open GOP come after their keyframe
	// in decoding order but before it on screen.
	primedMin time.Duration
	primed    bool
	grown     uint64
}

// NewDTSEstimator returns an estimator for a track with the given RTP
// clock rate.
func NewDTSEstimator(clockRate int) *DTSEstimator {
	if clockRate <= 0 {
		clockRate = 90000
	}
	return &DTSEstimator{tick: time.Second / time.Duration(clockRate), window: make([]time.Duration, 0, 8)}
}

// Depth reports the learned reorder depth (0 for streams without B-frames).
func (e *DTSEstimator) Depth() int { return e.depth }

// Prime learns the reorder depth and frame spacing from the presentation
// times of the stream's first frames, in decoding order, before Next is
// called for the same frames.
func (e *DTSEstimator) Prime(pts []time.Duration) {
	for i, p := range pts {
		e.observe(p)
		if i == 0 || p < e.primedMin {
			e.primedMin = p
		}
	}
	e.primed = len(pts) > 0
	e.hn, e.hi = 0, 0
}

// Next returns the decoding timestamp of the next frame in decoding order.
func (e *DTSEstimator) Next(pts time.Duration) time.Duration {
	if e.observe(pts) && e.started {
		e.grown++
	}
	i := len(e.window)
	for i > 0 && e.window[i-1] > pts {
		i--
	}
	e.window = append(e.window, 0)
	copy(e.window[i+1:], e.window[i:])
	e.window[i] = pts

	var dts time.Duration
	if len(e.window) > e.depth {
		dts = e.window[0]
		n := copy(e.window, e.window[1:])
		e.window = e.window[:n]
	} else {
		// Warm-up: fewer frames than the depth; extrapolate backwards
		// from the earliest presentation time at the frame spacing.
		first := e.window[0]
		if e.primed && e.primedMin < first {
			first = e.primedMin
		}
		dts = first - time.Duration(e.depth-len(e.window)+1)*e.step
	}
	if e.started && dts <= e.last {
		dts = e.last + e.tick
	}
	e.last, e.started = dts, true
	return dts
}

// observe updates depth and spacing with one presentation time and reports
// whether the depth grew.
func (e *DTSEstimator) observe(pts time.Duration) bool {
	later := 0
	for i := 0; i < e.hn; i++ {
		h := e.history[i]
		if h > pts {
			later++
		}
		d := h - pts
		if d < 0 {
			d = -d
		}
		if d > 0 && (e.step == 0 || d < e.step) {
			e.step = d
		}
	}
	e.history[e.hi] = pts
	e.hi = (e.hi + 1) % len(e.history)
	if e.hn < len(e.history) {
		e.hn++
	}
	if later > e.depth {
		e.depth = later
		if cap(e.window) < e.depth+1 {
			w := make([]time.Duration, len(e.window), e.depth+1)
			copy(w, e.window)
			e.window = w
		}
		return true
	}
	return false
}
