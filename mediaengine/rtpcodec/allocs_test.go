package rtpcodec

import (
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

// The per-packet paths allocate nothing once warm: packetising,
// reordering, and depacketising a packet that does not complete a frame.
// (A completed frame allocates the slab the published Frame owns.)
func TestHotPathsDoNotAllocate(t *testing.T) {
	track := &media.Track{Codec: media.CodecH264, ClockRate: 90000, SPS: testSPS, PPS: testPPS}
	vp, _ := NewPacketizer(h264Format, track, 1, 0, DefaultMTU)
	frame := &media.Frame{Track: track, Keyframe: true, NALUs: [][]byte{nalu(20, 0x06), nalu(9000, 0x65)}}
	aacTrack := &media.Track{Codec: media.CodecAAC, ClockRate: 48000, SampleRate: 48000, Channels: 2}
	aacFormat, _ := FormatForTrack(aacTrack, 97)
	ap, _ := NewPacketizer(aacFormat, aacTrack, 1, 0, DefaultMTU)
	aacFrame := &media.Frame{Track: aacTrack, Payload: nalu(3000)}
	send := func([]byte) error { return nil }

	rb := NewReorderBuffer(64, 100*time.Millisecond)
	raw := make([]byte, 200)
	raw[0] = 0x80
	deliver := func([]byte, time.Time) {}
	seq := uint16(0)

	d, _ := NewDepacketizer(h264Format, &media.Track{Codec: media.CodecH264, ClockRate: 90000}, NewStreamClock(), func(*media.Frame) {})
	middle := append([]byte{0x7c, 0x05}, nalu(1200)...) // FU-A, neither start nor end
	start := append([]byte{0x7c, 0x85}, nalu(1200)...)
	var pk rtp.Packet
	dseq := uint16(0)
	now := time.Now()
	d.Decode(pkt(dseq, 0, false, start), now)

	for _, tt := range []struct {
		name string
		fn   func()
	}{
		{"H.264 packetiser", func() { vp.Packetize(frame, 0, send) }},
		{"AAC packetiser", func() { ap.Packetize(aacFrame, 0, send) }},
		{"reorder buffer", func() {
			// Every other packet arrives swapped with its successor.
			s := seq ^ 1
			raw[2], raw[3] = byte(s>>8), byte(s)
			rb.Push(raw, now, deliver)
			seq++
		}},
		{"H.264 depacketiser, FU-A middle", func() {
			dseq++
			pk.Header = rtp.Header{Version: 2, SequenceNumber: dseq}
			pk.Payload = middle
			if dseq%4000 == 0 { // stay under MaxAccessUnitSize
				pk.Payload = start
			}
			d.Decode(&pk, now)
		}},
	} {
		if n := testing.AllocsPerRun(1000, tt.fn); n != 0 {
			t.Errorf("%s: %.1f allocations per packet", tt.name, n)
		}
	}
}
