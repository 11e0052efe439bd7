package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
	"golang.org/x/net/ipv4"
)

// maxPayload is the RTP payload size a pack is split at (as
// test/peers/psrtp and devices do).
const maxPayload = 1400

// pack is a piece of the program stream and when it is due from the
// stream's start.
type pack struct {
	at   time.Duration
	data []byte
}

// splitPacks walks a program stream (pack headers, system headers, PSMs,
// PES packets) and cuts it before each PES that carries a PTS, timing each
// piece by that PTS: a device sends each frame when it is encoded, while
// mpegpsmux writes a pack header only every few hundred milliseconds.
func splitPacks(ps []byte) ([]pack, error) {
	var packs []pack
	var pts0 int64 = -1
	cut, at := 0, time.Duration(0)
	for off := 0; off < len(ps); {
		if len(ps)-off < 6 || ps[off] != 0 || ps[off+1] != 0 || ps[off+2] != 1 {
			if len(ps)-off < 4<<10 {
				break // a tail the muxer left; it goes with the last piece
			}
			return nil, fmt.Errorf("no start code at byte %d of %d", off, len(ps))
		}
		id := ps[off+3]
		switch id {
		case 0xba:
			if len(ps)-off < 14 {
				return nil, fmt.Errorf("short pack header at byte %d", off)
			}
			off += 14 + int(ps[off+13]&7)
			continue
		case 0xb9:
			off += 4
			continue
		}
		n := 6 + (int(ps[off+4])<<8 | int(ps[off+5]))
		if id >= 0xc0 && id <= 0xef && len(ps)-off >= 14 && ps[off+7]&0x80 != 0 {
			b := ps[off+9:]
			pts := int64(b[0]>>1&7)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1)
			if pts0 < 0 {
				pts0 = pts
			}
			// Everything before this PES goes at the previous time.
			if off > cut {
				packs = append(packs, pack{at: at, data: ps[cut:off]})
				cut = off
			}
			at = max(at, time.Duration(pts-pts0)*time.Second/90000)
		}
		off += n
	}
	if cut < len(ps) {
		packs = append(packs, pack{at: at, data: ps[cut:]})
	}
	if len(packs) == 0 {
		return nil, fmt.Errorf("no packs")
	}
	// A program stream marks no frame's end: each track's last frame is
	// complete when the next PES or the program end code arrives.
	if last := packs[len(packs)-1]; !bytes.HasSuffix(last.data, []byte{0, 0, 1, 0xb9}) {
		packs = append(packs, pack{at: last.at, data: []byte{0, 0, 1, 0xb9}})
	}
	return packs, nil
}

// lateness is how far behind their PTS the senders sent pieces: a sender
// that falls behind sends in bursts the engine would not otherwise see.
type lateness struct {
	max  atomic.Int64 // nanoseconds
	over atomic.Int64 // pieces sent more than lateLimit late
	all  atomic.Int64
}

const lateLimit = 20 * time.Millisecond

func (l *lateness) add(d time.Duration) {
	if l == nil {
		return
	}
	l.all.Add(1)
	if d > lateLimit {
		l.over.Add(1)
	}
	for {
		m := l.max.Load()
		if int64(d) <= m || l.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// sendPS sends the pieces as RTP (payload type 96, 90 kHz, marker on each
// piece's last packet) over UDP to addr in real time, after delay; it
// returns the packets sent. late (may be nil) notes how late each piece went.
func sendPS(ctx context.Context, packs []pack, addr string, ssrc uint32, delay time.Duration, late *lateness) (int, error) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	start := time.Now()
	seq := uint16(rand.Uint32())
	sent := 0
	// A piece goes out in one sendmmsg(2) (x/net falls back to a write a
	// packet elsewhere): the senders of hundreds of streams share a core
	// with other work, and one syscall a packet made them fall behind and
	// send in catch-up bursts no device sends.
	pc := ipv4.NewPacketConn(conn.(*net.UDPConn))
	var msgs []ipv4.Message
	var bufs [][]byte
	for _, p := range packs {
		if wait := time.Until(start.Add(p.at)); wait > time.Millisecond {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return sent, ctx.Err()
			}
		}
		late.add(time.Since(start.Add(p.at)))
		ts := uint32(p.at * 90000 / time.Second)
		msgs = msgs[:0]
		for i, off := 0, 0; off < len(p.data); i, off = i+1, off+maxPayload {
			end := min(off+maxPayload, len(p.data))
			if i == len(bufs) {
				bufs = append(bufs, make([]byte, 0, 12+maxPayload))
			}
			h := rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, Timestamp: ts, SSRC: ssrc, Marker: end == len(p.data)}
			hl, _ := h.MarshalTo(bufs[i][:cap(bufs[i])])
			bufs[i] = append(bufs[i][:hl], p.data[off:end]...)
			msgs = append(msgs, ipv4.Message{Buffers: [][]byte{bufs[i]}})
			seq++
		}
		for len(msgs) > 0 {
			n, err := pc.WriteBatch(msgs, 0)
			sent += n
			if err != nil {
				return sent, err
			}
			msgs = msgs[n:]
		}
	}
	return sent, nil
}
