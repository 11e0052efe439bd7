package hub

import "time"

// trackStats counts a track's frames and bytes and keeps the frame and bit
// rates of the last complete second, measured by arrival time.
type trackStats struct {
	frames, bytes       uint64
	secStart            time.Time
	secFrames, secBytes uint64
	fps, kbps           float64
}

func (t *trackStats) add(now time.Time, size int) {
	t.frames++
	t.bytes += uint64(size)
	if t.secStart.IsZero() {
		t.secStart = now
	}
	if d := now.Sub(t.secStart); d >= time.Second {
		t.fps = float64(t.secFrames) / d.Seconds()
		t.kbps = float64(t.secBytes) * 8 / 1000 / d.Seconds()
		t.secStart, t.secFrames, t.secBytes = now, 0, 0
	}
	t.secFrames++
	t.secBytes += uint64(size)
}
