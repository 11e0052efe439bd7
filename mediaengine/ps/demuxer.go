package ps

import (
	"encoding/binary"
)

// Stream types of a program stream map (ISO/IEC 13818-1 Table 2-34) and
// the audio types GB/T 28181 adds to it.
const (
	StreamTypeAAC   byte = 0x0f
	StreamTypeH264  byte = 0x1b
	StreamTypeH265  byte = 0x24
	StreamTypeG711A byte = 0x90
	StreamTypeG711U byte = 0x91
)

// Start-code stream ids (ISO/IEC 13818-1 Table 2-18).
const (
	idEnd          = 0xb9
	idPack         = 0xba
	idSystemHeader = 0xbb
	idPSM          = 0xbc
	idAudioFirst   = 0xc0
	idAudioLast    = 0xdf
	idVideoFirst   = 0xe0
	idVideoLast    = 0xef
)

// MaxUnitSize bounds one reassembled access unit; a video frame larger
// than this (far above a 4K intra frame at camera bit rates) is dropped.
const MaxUnitSize = 8 << 20

// Unit is one elementary-stream access unit: a video frame's Annex-B bytes
// or an audio PES payload.
type Unit struct {
	// StreamID is the PES stream_id (0xC0-0xDF audio, 0xE0-0xEF video).
	StreamID byte
	// StreamType is the PSM's type for the stream, 0 when no PSM has
	// named it (the consumer then recognises the codec from the data).
	StreamType byte
	// PTS and DTS are the 33-bit 90 kHz timestamps; DTS equals PTS when
	// the PES carried none.
	PTS, DTS int64
	// Data is owned by the receiver of the unit.
	Data []byte
}

// Stats counts what the demuxer met; Resyncs and Dropped are the marks of
// loss or garbage in the input.
type Stats struct {
	Packs, PSMs, PES, Units uint64
	// Resyncs counts skips to the next start code over bytes that were
	// not one; Dropped counts access units lost to a PES without a
	// timestamp to hang on, a malformed header, or MaxUnitSize.
	Resyncs, Dropped uint64
	// Unsupported counts PES packets of MPEG-1 syntax or of streams the
	// engine does not read (private streams, padding is not counted).
	Unsupported uint64
}

// pendingUnit is an access unit being reassembled from PES packets.
type pendingUnit struct {
	pts, dts int64
	data     []byte
	open     bool
}

// Demuxer reassembles access units from a program stream fed in pieces of
// any size (RTP payloads). It is owned by one goroutine.
type Demuxer struct {
	emit    func(Unit)
	buf     []byte
	psm     [256]byte
	pending [256]pendingUnit
	stats   Stats
}

// NewDemuxer returns a demuxer that hands every complete access unit to
// emit, in the order the units complete.
func NewDemuxer(emit func(Unit)) *Demuxer {
	return &Demuxer{emit: emit}
}

// Stats returns the counters so far.
func (d *Demuxer) Stats() Stats { return d.stats }

// Write feeds the next bytes of the program stream.
func (d *Demuxer) Write(b []byte) {
	if len(d.buf) == 0 {
		// The common case: parse the caller's bytes in place and keep only
		// an incomplete tail, so a payload is not copied twice.
		n := d.parse(b)
		d.buf = append(d.buf, b[n:]...)
		return
	}
	d.buf = append(d.buf, b...)
	n := d.parse(d.buf)
	rest := copy(d.buf, d.buf[n:])
	d.buf = d.buf[:rest]
}

// Reset forgets the partial packet and the access units being
// reassembled: the input lost bytes (an RTP packet never came), so what
// follows cannot continue them. The PSM is kept.
func (d *Demuxer) Reset() {
	d.buf = d.buf[:0]
	for id := range d.pending {
		if d.pending[id].open {
			d.stats.Dropped++
		}
		d.pending[id] = pendingUnit{}
	}
}

// Flush emits every access unit being reassembled; call it when the input
// ends.
func (d *Demuxer) Flush() {
	for id := range d.pending {
		d.flush(byte(id))
	}
}

// parse consumes whole packets from b and returns how many bytes it used.
func (d *Demuxer) parse(b []byte) int {
	off := 0
	for len(b)-off >= 4 {
		p := b[off:]
		if p[0] != 0 || p[1] != 0 || p[2] != 1 || p[3] < idEnd {
			off += d.resync(p)
			continue
		}
		n, ok := d.packet(p)
		if n == 0 {
			break // incomplete: wait for more bytes
		}
		if !ok {
			off += d.resync(p)
			continue
		}
		off += n
	}
	return off
}

// resync skips to the next start code of a system-level packet, keeping
// the last bytes that may begin one.
func (d *Demuxer) resync(p []byte) int {
	d.stats.Resyncs++
	for i := 1; i+3 < len(p); i++ {
		if p[i] == 0 && p[i+1] == 0 && p[i+2] == 1 && p[i+3] >= idEnd {
			return i
		}
	}
	return max(1, len(p)-3)
}

// packet handles the packet at the start of p. It returns its size, 0 when
// p does not hold all of it yet, and ok false when the bytes are not a
// valid packet.
func (d *Demuxer) packet(p []byte) (int, bool) {
	switch id := p[3]; id {
	case idEnd:
		return 4, true
	case idPack:
		if len(p) < 5 {
			return 0, true
		}
		if p[4]>>6 == 1 { // MPEG-2: 14 bytes and up to 7 of stuffing
			if len(p) < 14 || len(p) < 14+int(p[13]&7) {
				return 0, true
			}
			d.stats.Packs++
			return 14 + int(p[13]&7), true
		}
		if p[4]>>4 == 2 { // MPEG-1
			if len(p) < 12 {
				return 0, true
			}
			d.stats.Packs++
			return 12, true
		}
		return 4, false
	default:
		if len(p) < 6 {
			return 0, true
		}
		n := 6 + int(binary.BigEndian.Uint16(p[4:6]))
		if len(p) < n {
			return 0, true
		}
		d.body(id, p[6:n])
		return n, true
	}
}

func (d *Demuxer) body(id byte, p []byte) {
	switch {
	case id == idPSM:
		d.stats.PSMs++
		d.readPSM(p)
	case id >= idAudioFirst && id <= idVideoLast:
		d.stats.PES++
		d.readPES(id, p)
	case id == idSystemHeader, id == 0xbe: // system header, padding
	default:
		d.stats.Unsupported++
	}
}

// readPSM records the stream types of a program stream map (ISO/IEC
// 13818-1 2.5.4). Its CRC is not checked: devices in the field get it
// wrong, and a map that does not parse is simply not used.
func (d *Demuxer) readPSM(p []byte) {
	if len(p) < 6 {
		return
	}
	off := 4 + int(binary.BigEndian.Uint16(p[2:4]))
	if off+2 > len(p) {
		return
	}
	end := off + 2 + int(binary.BigEndian.Uint16(p[off:off+2]))
	off += 2
	end = min(end, len(p))
	for off+4 <= end {
		typ, id := p[off], p[off+1]
		d.psm[id] = typ
		off += 4 + int(binary.BigEndian.Uint16(p[off+2:off+4]))
	}
}

// readPES adds a PES packet's payload to its stream's access unit. A PES
// with a PTS starts a new unit (and completes the previous one); audio
// units complete with their PES, since an audio PES holds whole frames.
func (d *Demuxer) readPES(id byte, p []byte) {
	if len(p) < 3 || p[0]>>6 != 2 {
		d.stats.Unsupported++ // MPEG-1 PES syntax
		return
	}
	flags, hlen := p[1]>>6, int(p[2])
	if 3+hlen > len(p) || (flags&2 != 0 && hlen < 5) || (flags == 3 && hlen < 10) {
		d.stats.Dropped++
		return
	}
	payload := p[3+hlen:]
	u := &d.pending[id]
	if flags&2 != 0 {
		pts := timestamp(p[3:8])
		dts := pts
		if flags == 3 {
			dts = timestamp(p[8:13])
		}
		// A video frame larger than one PES (64 KB: a keyframe at 720p
		// and 2 Mbit/s) is split over several; GStreamer's mpegpsmux
		// repeats the timestamps on every piece, and those pieces are
		// one frame, not a new one each.
		if !u.open || id <= idAudioLast || pts != u.pts || dts != u.dts {
			d.flush(id)
			u.pts, u.dts = pts, dts
			u.open = true
			u.data = make([]byte, 0, max(len(payload), 4096))
		}
	} else if !u.open {
		d.stats.Dropped++ // a continuation whose start was lost
		return
	}
	if len(u.data)+len(payload) > MaxUnitSize {
		d.stats.Dropped++
		*u = pendingUnit{}
		return
	}
	u.data = append(u.data, payload...)
	if id <= idAudioLast {
		d.flush(id)
	}
}

func (d *Demuxer) flush(id byte) {
	u := &d.pending[id]
	if !u.open {
		return
	}
	out := Unit{StreamID: id, StreamType: d.psm[id], PTS: u.pts, DTS: u.dts, Data: u.data}
	*u = pendingUnit{}
	if len(out.Data) == 0 {
		return
	}
	d.stats.Units++
	d.emit(out)
}

// timestamp reads a 33-bit PTS or DTS field (ISO/IEC 13818-1 2.4.3.7).
func timestamp(b []byte) int64 {
	return int64(b[0]>>1&7)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1)
}
