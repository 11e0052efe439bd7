package rtpcodec

import (
	"bytes"
	"testing"

	"github.com/svcplatform/svc/mediaengine/media"
)

var vp8Format = Format{PayloadType: 96, EncodingName: "VP8", ClockRate: 90000}

// vp8Keyframe is a keyframe header of a 640x480 picture (RFC 6386 9.1)
// followed by n bytes of body.
func vp8Keyframe(n int) []byte {
	return append([]byte{0x50, 0x42, 0x00, 0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01}, nalu(n)...)
}

// vp8Interframe is an interframe (frame tag bit 0 set) of n bytes.
func vp8Interframe(n int) []byte { return append([]byte{0x31, 0x10, 0x00}, nalu(n)...) }

// TestVP8RoundTrip: frames packetised in MTU-sized pieces come back whole,
// keyframes flagged, the track sized from the first keyframe.
func TestVP8RoundTrip(t *testing.T) {
	track, err := vp8Format.Track(0)
	if err != nil || track.Codec != media.CodecVP8 || track.Kind() != media.KindVideo {
		t.Fatalf("track %+v, %v", track, err)
	}
	in := []*media.Frame{{Track: track, Keyframe: true, Payload: vp8Keyframe(3000)}, {Track: track, Payload: vp8Interframe(500)},
		{Track: track, Payload: vp8Interframe(2000)}}
	p, err := NewPacketizer(vp8Format, track, 1, 100, 1200)
	if err != nil {
		t.Fatal(err)
	}
	pkts := packetize(t, p, in, []uint32{0, 3000, 6000})
	if len(pkts) != 3+1+2 {
		t.Fatalf("%d packets, want 6", len(pkts))
	}
	d, c := newDepack(t, vp8Format, track)
	for _, pk := range pkts {
		if err := d.Decode(pk, t0); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.frames) != 3 {
		t.Fatalf("%d frames, want 3", len(c.frames))
	}
	for i, f := range c.frames {
		if !bytes.Equal(f.Payload, in[i].Payload) || f.Keyframe != (i == 0) || f.DTS != f.PTS {
			t.Fatalf("frame %d: keyframe %v, %d bytes, want %v, %d", i, f.Keyframe, len(f.Payload), i == 0, len(in[i].Payload))
		}
	}
	if track.Width != 640 || track.Height != 480 {
		t.Fatalf("track size %dx%d, want 640x480", track.Width, track.Height)
	}
}

// TestVP8LossAndStart: nothing before the first keyframe is published; a
// frame that lost a packet is dropped, the next whole one is not; the
// long descriptor forms (PictureID 15 bits, TL0PICIDX, TID) are skipped.
func TestVP8LossAndStart(t *testing.T) {
	track, _ := vp8Format.Track(0)
	d, c := newDepack(t, vp8Format, track)
	key := vp8Keyframe(100)
	inter := vp8Interframe(100)
	// An interframe before any keyframe.
	d.Decode(pkt(1, 0, true, append([]byte{0x10}, inter...)), t0)
	// A keyframe with X, I (M: 15-bit PictureID), L and T set, in two packets.
	d.Decode(pkt(2, 3000, false, append([]byte{0x90, 0xe0, 0x81, 0x02, 0x05, 0x40}, key[:50]...)), t0)
	d.Decode(pkt(3, 3000, true, append([]byte{0x80, 0xe0, 0x81, 0x02, 0x05, 0x40}, key[50:]...)), t0)
	// An interframe whose middle packet is lost (seq 5).
	d.Decode(pkt(4, 6000, false, append([]byte{0x10}, inter[:40]...)), t0)
	d.Decode(pkt(6, 6000, true, append([]byte{0x00}, inter[80:]...)), t0)
	// A whole interframe.
	d.Decode(pkt(7, 9000, true, append([]byte{0x10}, inter...)), t0)
	if len(c.frames) != 2 || !c.frames[0].Keyframe || !bytes.Equal(c.frames[0].Payload, key) || !bytes.Equal(c.frames[1].Payload, inter) {
		t.Fatalf("%d frames, want the keyframe and the last interframe", len(c.frames))
	}
	if s := d.Stats().Snapshot(); s.Lost != 1 || s.Dropped != 2 {
		t.Fatalf("stats %+v, want 1 lost and 2 dropped", s)
	}
	if _, _, err := VP8Payload([]byte{0x90, 0x80}); err == nil {
		t.Fatal("a descriptor cut inside its PictureID was taken")
	}
}

func FuzzVP8Depacketizer(f *testing.F) {
	fuzzDepacketizer(f, vp8Format, [][]byte{
		fuzzSeed(3, append([]byte{0x10}, vp8Keyframe(20)...)),
		fuzzSeed(2, append([]byte{0x90, 0xe0, 0x81, 0x02, 0x05, 0x40}, vp8Keyframe(20)...), append([]byte{0x00}, 1, 2, 3)),
		fuzzSeed(1, []byte{0x80}, []byte{0x10, 0x31}),
	})
}
