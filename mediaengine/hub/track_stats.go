package hub

import "time"

// trackStats counts a track's frames and bytes and keeps the frame and bit
// rates of the last complete second of media time. Rates follow the frames'
// decoding timestamps rather than their arrival, so a source delivered in
// bursts (a loaded host, a TCP stall) still reports the rate it was encoded at.
type trackStats struct {
	frames, bytes       uint64
	secStarted          bool
	secStart            time.Duration
	secFrames, secBytes uint64
	fps, kbps           float64
}

// maxStatsGap is the timestamp jump beyond which a window is discarded
// instead of measured: the source restarted its clock or skipped ahead.
const maxStatsGap = 10 * time.Second

func (t *trackStats) add(dts time.Duration, size int) {
	t.frames++
	t.bytes += uint64(size)
	d := dts - t.secStart
	switch {
	case !t.secStarted || d < 0 || d > maxStatsGap:
		t.secStarted, t.secStart, t.secFrames, t.secBytes = true, dts, 0, 0
	case d >= time.Second:
		t.fps = float64(t.secFrames) / d.Seconds()
		t.kbps = float64(t.secBytes) * 8 / 1000 / d.Seconds()
		t.secStart, t.secFrames, t.secBytes = dts, 0, 0
	}
	t.secFrames++
	t.secBytes += uint64(size)
}
