package rtpcodec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/svcplatform/svc/mediaengine/media"
)

// gstLATM is the format GStreamer's rtpmp4apay announces for 44.1 kHz mono
// AAC-LC (its StreamMuxConfig stops inside latmBufferFullness).
var gstLATM = Format{PayloadType: 96, EncodingName: "MP4A-LATM", ClockRate: 44100,
	FMTP: ParseFMTP("cpresent=0;config=40002410adca00")}

// latmPayload is one AudioMuxElement per frame: PayloadLengthInfo (255
// means more length bytes follow) and the frame.
func latmPayload(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		n := len(f)
		for ; n >= 255; n -= 255 {
			b = append(b, 255)
		}
		b = append(append(b, byte(n)), f...)
	}
	return b
}

func TestLATMTrack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		asc    []byte
		rate   int
		ch     int
		err    error
	}{
		{"gstreamer", gstLATM, []byte{0x12, 0x08, 0x56, 0xe5, 0x00}, 44100, 1, nil},
		{"in band", Format{EncodingName: "mp4a-latm", ClockRate: 48000, Channels: 2, FMTP: ParseFMTP("cpresent=1")}, nil, 48000, 2, nil},
		{"cpresent=0 without config", Format{EncodingName: "MP4A-LATM", ClockRate: 48000, FMTP: ParseFMTP("cpresent=0")}, nil, 0, 0, ErrBadParameters},
		{"bad hex", Format{EncodingName: "MP4A-LATM", ClockRate: 48000, FMTP: ParseFMTP("cpresent=0;config=zz")}, nil, 0, 0, ErrBadParameters},
		{"two layers", Format{EncodingName: "MP4A-LATM", ClockRate: 48000, FMTP: ParseFMTP("cpresent=0;config=40012410adca00")}, nil, 0, 0, ErrUnsupportedCodec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			track, err := tc.format.Track(1)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if track.Codec != media.CodecAAC || !bytes.Equal(track.AudioSpecificConfig, tc.asc) || track.SampleRate != tc.rate || track.Channels != tc.ch {
				t.Fatalf("track %+v", track)
			}
		})
	}
}

// TestLATMInBandConfig: with cpresent=1 the track has no configuration
// until the first AudioMuxElement brings one, and then it is filled.
func TestLATMInBandConfig(t *testing.T) {
	f := Format{EncodingName: "MP4A-LATM", ClockRate: 48000, Channels: 2, FMTP: ParseFMTP("cpresent=1")}
	track, err := f.Track(0)
	if err != nil {
		t.Fatal(err)
	}
	d, col := newDepack(t, f, track)
	// useSameStreamMux 0; StreamMuxConfig 0x40002320 (48 kHz stereo
	// AAC-LC), the rest of frameLengthType 0, latmBufferFullness 0xff, no
	// other data, no CRC; PayloadLengthInfo 3 and the frame 01 02 03; all
	// one bit off byte alignment.
	first := []byte{0x20, 0x00, 0x11, 0x90, 0x1f, 0xe0, 0x18, 0x08, 0x10, 0x18}
	// useSameStreamMux 1, PayloadLengthInfo 1, the frame 09.
	second := []byte{0x80, 0x84, 0x80}
	if err := d.Decode(pkt(1, 0, true, first), t0); err != nil {
		t.Fatal(err)
	}
	if len(col.frames) != 1 || !bytes.Equal(col.frames[0].Payload, []byte{1, 2, 3}) || !bytes.Equal(track.AudioSpecificConfig, []byte{0x11, 0x90}) {
		t.Fatalf("frames %d, track %+v", len(col.frames), track)
	}
	if err := d.Decode(pkt(2, 1024, true, second), t0); err != nil {
		t.Fatal(err)
	}
	if len(col.frames) != 2 || !bytes.Equal(col.frames[1].Payload, []byte{9}) {
		t.Fatalf("%d frames", len(col.frames))
	}
}

func FuzzLATMDepacketizer(f *testing.F) {
	fuzzDepacketizer(f, gstLATM, [][]byte{
		fuzzSeed(3, latmPayload(nalu(20), nalu(30))),
		fuzzSeed(0, latmPayload(nalu(300))[:150], latmPayload(nalu(300))[150:]),
		fuzzSeed(1, []byte{0xff, 0xff, 0}),
	})
}
