// Package fmp4 writes fragmented MP4 (ISO/IEC 14496-12, 8.8 movie
// fragments) for HTTP-fMP4 and HLS: an initialisation segment (ftyp and
// moov with mvex) and fragments (moof and mdat) of one or more samples per
// track. It also reads box structure, which tests use to check what the
// engine writes and which is fuzzed because recordings will be read back.
//
// Sample entries: avc1 (avcC), hvc1 (hvcC), mp4a (esds), Opus (dOps), and
// the QuickTime alaw/ulaw entries ffmpeg and browsers' MSE-less players
// accept for G.711.
package fmp4

import (
	"encoding/binary"
	"time"
)

// boxWriter appends boxes to a byte slice; start and end bracket a box and
// end fills in its size.
type boxWriter struct {
	b     []byte
	stack []int
}

func (w *boxWriter) start(typ string) {
	w.stack = append(w.stack, len(w.b))
	w.b = append(w.b, 0, 0, 0, 0, typ[0], typ[1], typ[2], typ[3])
}

func (w *boxWriter) startFull(typ string, version byte, flags uint32) {
	w.start(typ)
	w.b = append(w.b, version, byte(flags>>16), byte(flags>>8), byte(flags))
}

func (w *boxWriter) end() {
	i := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	binary.BigEndian.PutUint32(w.b[i:], uint32(len(w.b)-i))
}

func (w *boxWriter) u8(v byte)    { w.b = append(w.b, v) }
func (w *boxWriter) u16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *boxWriter) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *boxWriter) u64(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *boxWriter) raw(v []byte) { w.b = append(w.b, v...) }
func (w *boxWriter) zeros(n int)  { w.b = append(w.b, make([]byte, n)...) }
func (w *boxWriter) str(s string) { w.b = append(w.b, s...) }

// matrix is the identity transformation of mvhd and tkhd.
var matrix = []uint32{0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000}

// TimeOrigin is added to every time ToTimescale converts, so that the
// decode times fMP4 (tfdt) and MPEG-TS (PES, PCR) carry, which are
// unsigned, keep the order of the hub's timestamps near a stream's start.
// Those are offsets from the stream's origin and may be a little negative
// there: a B-frame stream's first DTS precede its first PTS, and audio
// captured before the first video packet arrived is placed before the
// origin (RTSP publish and pull). Clamped to zero, such frames would share
// one decode time, which players reject or discard. The hub's timeline
// never goes back further than a few seconds (rtpcodec.Timeline).
const TimeOrigin = 10 * time.Second

// ToTimescale converts a time offset to units of scale per second without
// overflow or drift, counted from TimeOrigin before the stream's origin.
func ToTimescale(d time.Duration, scale uint32) uint64 {
	d += TimeOrigin
	if d < 0 {
		d = 0
	}
	s, r := uint64(d/time.Second), uint64(d%time.Second)
	return s*uint64(scale) + r*uint64(scale)/uint64(time.Second)
}
