package rtpcodec

import "time"

// Timeline maps one track's 32-bit RTP timestamps onto the stream's common
// origin: it unwraps the wrap-around (every 13 h at 90 kHz, 24 h at
// 48 kHz), and it repairs jumps — a camera that restarts its clock, a
// source that splices streams — by continuing from the arrival time, so
// positions never leap by hours or run backwards by more than reordering
// explains.
//
// A Timeline is owned by one goroutine (its track's depacketiser).
type Timeline struct {
	clock *StreamClock
	rate  int64

	started     bool
	lastTS      uint32
	ticks       int64         // unwrapped RTP time of lastTS, from the first packet
	base        time.Duration // position of tick 0
	lastPos     time.Duration
	lastArrival time.Time

	hasSR bool
	srNTP time.Time
	srTS  uint32

	discontinuities uint64
}

// Jumps larger than these (compared with the time that passed between
// arrivals) are discontinuities. Backwards movement within a second is
// B-frame reordering (four B-frames at 5 fps stay inside it); a live
// source whose clock goes back further (GStreamer's shared media did, by
// 2 s, under load) is repaired, because taking it for reordering would
// teach the DTS estimator a reorder depth of many frames and hold its
// DTS a tick apart until the presentation times caught up. Forward bursts
// within ten seconds are a server sending its GOP cache quickly.
const (
	maxForwardJump  = 10 * time.Second
	maxBackwardJump = time.Second
)

// NewTimeline returns the timeline of a track with the given RTP clock
// rate on the stream's clock.
func NewTimeline(clock *StreamClock, clockRate int) *Timeline {
	if clockRate <= 0 {
		clockRate = 90000
	}
	return &Timeline{clock: clock, rate: int64(clockRate)}
}

// SenderReport feeds an RTCP sender report of this track: the sender's
// wall-clock time ntp corresponds to RTP time rtpTS. Only reports that
// arrive before the track's first packet change its placement; later ones
// would make positions jump.
func (t *Timeline) SenderReport(ntp time.Time, rtpTS uint32, arrival time.Time) {
	t.clock.senderReport(ntp, arrival)
	t.hasSR, t.srNTP, t.srTS = true, ntp, rtpTS
}

// Discontinuities counts the jumps repaired so far.
func (t *Timeline) Discontinuities() uint64 { return t.discontinuities }

// Position returns the offset from the stream's origin of RTP time ts,
// received at arrival.
func (t *Timeline) Position(ts uint32, arrival time.Time) time.Duration {
	if !t.started {
		t.started = true
		t.lastTS = ts
		local := arrival
		if t.hasSR {
			if l, ok := t.clock.local(t.srNTP.Add(t.duration(int64(int32(ts - t.srTS))))); ok {
				local = l
			}
		}
		t.base = t.clock.since(local)
		t.lastPos, t.lastArrival = t.base, arrival
		return t.base
	}
	ticks := t.ticks + int64(int32(ts-t.lastTS))
	pos := t.base + t.duration(ticks)
	media := pos - t.lastPos
	elapsed := arrival.Sub(t.lastArrival)
	if elapsed < 0 {
		elapsed = 0
	}
	if media > elapsed+maxForwardJump || media < -maxBackwardJump {
		pos = t.lastPos + elapsed
		t.base = pos - t.duration(ticks)
		t.discontinuities++
	}
	t.ticks, t.lastTS = ticks, ts
	t.lastPos, t.lastArrival = pos, arrival
	return pos
}

// duration converts RTP ticks to a duration without overflowing for
// ticks of any realistic stream age.
func (t *Timeline) duration(ticks int64) time.Duration {
	return time.Duration(ticks/t.rate)*time.Second + time.Duration(ticks%t.rate)*time.Second/time.Duration(t.rate)
}
