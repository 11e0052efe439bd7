package rtpcodec

import (
	"bytes"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Frames packetised at several MTUs come back identical from the
// depacketiser: single NAL units, aggregation and fragmentation.
func TestVideoPacketizerRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		codec  media.Codec
		format Format
		key    [][]byte
		delta  [][]byte
	}{
		{
			name: "H.264", codec: media.CodecH264, format: h264Format,
			key:   [][]byte{nalu(20, 0x06), nalu(5000, 0x65), nalu(3000, 0x65)},
			delta: [][]byte{nalu(900, 0x41), nalu(10, 0x01), nalu(1385, 0x41), nalu(1386, 0x41), nalu(1388, 0x41)},
		},
		{
			name: "H.265", codec: media.CodecH265, format: h265Format,
			key:   [][]byte{nalu(20, 0x4e, 0x01), nalu(7000, 0x26, 0x01)},
			delta: [][]byte{nalu(700, 0x02, 0x01), nalu(3, 0x02, 0x01), nalu(1386, 0x02, 0x01)},
		},
	}
	for _, tt := range tests {
		for _, mtu := range []int{100, 600, DefaultMTU} {
			t.Run(tt.name, func(t *testing.T) {
				src := &media.Track{Codec: tt.codec, ClockRate: 90000, SPS: testSPS, PPS: testPPS}
				if tt.codec == media.CodecH265 {
					src.VPS, src.SPS, src.PPS = testVPS, testSPS265, testPPS265
				}
				p, err := NewPacketizer(tt.format, src, 0x1234, 65530, mtu)
				if err != nil {
					t.Fatal(err)
				}
				var frames []*media.Frame
				var tss []uint32
				for i := 0; i < 8; i++ {
					f := &media.Frame{Track: src, NALUs: tt.delta}
					if i%4 == 0 {
						f = &media.Frame{Track: src, NALUs: tt.key, Keyframe: true}
					}
					frames = append(frames, f)
					tss = append(tss, uint32(i*3000))
				}
				pkts := packetize(t, p, frames, tss)
				markers := 0
				for _, pk := range pkts {
					if pk.Marker {
						markers++
					}
					if pk.MarshalSize() > mtu {
						t.Fatalf("packet of %d bytes over MTU %d", pk.MarshalSize(), mtu)
					}
					if pk.SSRC != 0x1234 {
						t.Fatalf("ssrc %x", pk.SSRC)
					}
				}
				if markers != len(frames) {
					t.Fatalf("%d markers for %d frames", markers, len(frames))
				}
				dst := &media.Track{Codec: tt.codec, ClockRate: 90000}
				d, c := newDepack(t, tt.format, dst)
				for i, pk := range pkts {
					if err := d.Decode(pk, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
						t.Fatal(err)
					}
				}
				if len(c.frames) != len(frames) {
					t.Fatalf("got %d frames, want %d", len(c.frames), len(frames))
				}
				for i, f := range c.frames {
					want := frames[i].NALUs
					if frames[i].Keyframe {
						// The packetiser put the track's parameter sets in front.
						ps := [][]byte{src.SPS, src.PPS}
						if tt.codec == media.CodecH265 {
							ps = [][]byte{src.VPS, src.SPS, src.PPS}
						}
						want = append(ps, want...)
					}
					if !equalNALUs(f.NALUs, want) || f.Keyframe != frames[i].Keyframe {
						t.Fatalf("frame %d differs (%d units, want %d)", i, len(f.NALUs), len(want))
					}
					if got := f.PTS - c.frames[0].PTS; got != time.Duration(i)*3000*time.Second/90000 {
						t.Fatalf("frame %d at %v", i, got)
					}
				}
				if !bytes.Equal(dst.SPS, src.SPS) || !bytes.Equal(dst.PPS, src.PPS) || !bytes.Equal(dst.VPS, src.VPS) {
					t.Fatal("parameter sets did not arrive in-band")
				}
			})
		}
	}
}

func TestAudioPacketizerRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		track   *media.Track
		format  Format
		sizes   []int
		step    uint32 // RTP ticks per frame
		packets int    // expected packet count at the MTU used
	}{
		{"AAC", &media.Track{Codec: media.CodecAAC, ClockRate: 48000, SampleRate: 48000, Channels: 2, AudioSpecificConfig: []byte{0x11, 0x90}},
			Format{
				PayloadType:  97,
				EncodingName: "mpeg4-generic",
				ClockRate:    48000,
				Channels:     2,
				FMTP:         ParseFMTP("streamtype=5;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=1190"),
			},
			[]int{300, 2000, 10}, 1024, 1 + 5 + 1},
		{"PCMA", &media.Track{Codec: media.CodecPCMA, ClockRate: 8000, SampleRate: 8000, Channels: 1},
			Format{PayloadType: 8, EncodingName: "PCMA", ClockRate: 8000}, []int{160, 160}, 160, 2},
		{"Opus", &media.Track{Codec: media.CodecOpus, ClockRate: 48000, SampleRate: 48000, Channels: 2},
			Format{PayloadType: 111, EncodingName: "opus", ClockRate: 48000, Channels: 2}, []int{120, 3, 401}, 960, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPacketizer(tt.format, tt.track, 1, 0, 500)
			if err != nil {
				t.Fatal(err)
			}
			var frames []*media.Frame
			var tss []uint32
			for i, n := range tt.sizes {
				frames = append(frames, &media.Frame{Track: tt.track, Payload: nalu(n)})
				tss = append(tss, uint32(i)*tt.step)
			}
			pkts := packetize(t, p, frames, tss)
			if len(pkts) != tt.packets {
				t.Fatalf("%d packets, want %d", len(pkts), tt.packets)
			}
			dst, err := tt.format.Track(0)
			if err != nil {
				t.Fatal(err)
			}
			d, c := newDepack(t, tt.format, dst)
			for _, pk := range pkts {
				if err := d.Decode(pk, t0); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name == "PCMA" {
				// Sample runs are frames of their own; compare the bytes.
				var got, want []byte
				for _, f := range c.frames {
					got = append(got, f.Payload...)
				}
				for _, f := range frames {
					want = append(want, f.Payload...)
				}
				if !bytes.Equal(got, want) {
					t.Fatal("samples differ")
				}
				return
			}
			if len(c.frames) != len(frames) {
				t.Fatalf("got %d frames, want %d", len(c.frames), len(frames))
			}
			for i, f := range c.frames {
				if !bytes.Equal(f.Payload, frames[i].Payload) {
					t.Fatalf("frame %d differs", i)
				}
				want := time.Duration(tss[i]) * time.Second / time.Duration(tt.track.ClockRate)
				if f.PTS != want || f.DTS != f.PTS {
					t.Fatalf("frame %d: PTS %v DTS %v, want %v", i, f.PTS, f.DTS, want)
				}
			}
		})
	}
}
