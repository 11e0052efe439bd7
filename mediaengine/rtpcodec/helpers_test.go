package rtpcodec

import (
	"bytes"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Parameter sets of a 320x240 x264 stream (baseline), used where a test
// needs real-looking ones.
var (
	testSPS = []byte{0x67, 0x42, 0xc0, 0x0d, 0xda, 0x05, 0x07, 0xec, 0x04, 0x40, 0x00, 0x00, 0x03, 0x00, 0x40, 0x00, 0x00, 0x0c, 0x83, 0xc5, 0x0a, 0xa8}
	testPPS = []byte{0x68, 0xce, 0x0f, 0xc8}
	testVPS = []byte{0x40, 0x01, 0x0c, 0x01, 0xff, 0xff, 0x01, 0x60, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x5d, 0xac, 0x09}
	// H.265 SPS/PPS NAL headers with a body; content is not parsed here.
	testSPS265 = []byte{0x42, 0x01, 0x01, 0x01, 0x60, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03}
	testPPS265 = []byte{0x44, 0x01, 0xc1, 0x72, 0xb4, 0x62, 0x40}
)

// nalu makes a NAL unit with header hdr and n payload bytes following a
// recognisable pattern.
func nalu(n int, hdr ...byte) []byte {
	b := append([]byte(nil), hdr...)
	for i := 0; i < n; i++ {
		b = append(b, byte(i*7+len(hdr)))
	}
	return b
}

func pkt(seq uint16, ts uint32, marker bool, payload []byte) *rtp.Packet {
	return &rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: seq, Timestamp: ts, Marker: marker, PayloadType: 96}, Payload: payload}
}

// collector gathers emitted frames.
type collector struct{ frames []*media.Frame }

func (c *collector) emit(f *media.Frame) { c.frames = append(c.frames, f) }

func newDepack(t *testing.T, f Format, track *media.Track) (Depacketizer, *collector) {
	t.Helper()
	c := &collector{}
	d, err := NewDepacketizer(f, track, NewStreamClock(), c.emit)
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

func equalNALUs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// packetize runs a packetiser over frames and parses the packets back.
func packetize(t *testing.T, p Packetizer, frames []*media.Frame, tss []uint32) []*rtp.Packet {
	t.Helper()
	var out []*rtp.Packet
	for i, f := range frames {
		err := p.Packetize(f, tss[i], func(b []byte) error {
			var pk rtp.Packet
			if err := pk.Unmarshal(append([]byte(nil), b...)); err != nil {
				return err
			}
			out = append(out, &pk)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

var t0 = time.Unix(1_700_000_000, 0)
