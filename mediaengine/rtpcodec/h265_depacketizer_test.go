package rtpcodec

import (
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

var h265Format = Format{PayloadType: 96, EncodingName: "H265", ClockRate: 90000, FMTP: map[string]string{}}

func TestH265DepacketizerDONL(t *testing.T) {
	f := Format{PayloadType: 96, EncodingName: "H265", ClockRate: 90000, FMTP: ParseFMTP("sprop-max-don-diff=2")}
	track := &media.Track{Codec: media.CodecH265, ClockRate: 90000}
	d, c := newDepack(t, f, track)
	irap := nalu(100, 0x26, 0x01)                  // IDR_W_RADL
	ap := []byte{h265NALAP << 1, 0x01, 0x00, 0x00} // AP header, DONL
	for i, u := range [][]byte{testVPS, testSPS265, testPPS265} {
		if i > 0 {
			ap = append(ap, byte(i)) // DOND
		}
		ap = append(ap, byte(len(u)>>8), byte(len(u)))
		ap = append(ap, u...)
	}
	fu1 := append([]byte{h265NALFU << 1, 0x01, 0x80 | 19, 0x00, 0x03}, irap[2:50]...) // S, DONL
	fu2 := append([]byte{h265NALFU << 1, 0x01, 0x40 | 19}, irap[50:]...)
	single := append([]byte{0x02, 0x01, 0x00, 0x04}, nalu(30)...) // TRAIL_R with DONL
	steps := [][]byte{ap, fu1, fu2}
	for i, p := range steps {
		if err := d.Decode(pkt(uint16(i), 1000, i == len(steps)-1, p), t0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < probeFrames; i++ {
		if err := d.Decode(pkt(uint16(10+i), uint32(4000+i*3000), true, single), t0.Add(time.Duration(i)*time.Millisecond)); err != nil && i == 0 {
			t.Fatal(err)
		}
	}
	if len(c.frames) == 0 {
		t.Fatal("no frames")
	}
	want := [][]byte{testVPS, testSPS265, testPPS265, irap}
	if !equalNALUs(c.frames[0].NALUs, want) || !c.frames[0].Keyframe {
		t.Fatalf("keyframe differs: %d units", len(c.frames[0].NALUs))
	}
	if !track.Ready() {
		t.Fatal("track lacks in-band parameter sets")
	}
	if got := c.frames[1].NALUs[0]; len(got) != 32 || got[0] != 0x02 || got[2] != 0 {
		t.Fatalf("single NAL unit with DONL rebuilt wrong: % x", got[:4])
	}
}
