package h264

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
)

// The parameter sets were written by ffmpeg's libx264 (testsrc2, high
// profile).
func TestParseSPS(t *testing.T) {
	for _, tc := range []struct {
		name, sps     string
		width, height int
		level         uint8
		fps           float64
	}{
		{"640x360", "6764001eacd940a02ff97011000003000100000300320f162d96", 640, 360, 30, 25},
		{"1920x1080 cropped", "67640028acd940780227e5c044000003000400000300c83c60c658", 1920, 1080, 40, 25},
		{"baseline without VUI", "6742c01e95a0", 0, 0, 30, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSPS(mediatest.MustHex(t, tc.sps))
			if tc.width == 0 {
				if err == nil && s.Width == 0 {
					t.Fatal("a truncated SPS parsed with no size")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Width != tc.width || s.Height != tc.height || s.LevelIDC != tc.level || s.ProfileIDC != 100 || s.FrameRate != tc.fps {
				t.Fatalf("got %+v", s)
			}
		})
	}
	if _, err := ParseSPS([]byte{0x68, 1, 2, 3}); !errors.Is(err, ErrNotSPS) {
		t.Fatalf("a PPS parsed as SPS: %v", err)
	}
}

func TestDecoderConfigRoundTrip(t *testing.T) {
	sps := mediatest.MustHex(t, "6764001eacd940a02ff97011000003000100000300320f162d96")
	pps := mediatest.MustHex(t, "68ebe3cb22c0")
	c, err := NewDecoderConfig(sps, pps)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDecoderConfig(c.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if back.LengthSize != 4 || !bytes.Equal(back.SPS[0], sps) || !bytes.Equal(back.PPS[0], pps) || back.Codec() != "avc1.64001E" {
		t.Fatalf("round trip: %+v %s", back, back.Codec())
	}
	for _, bad := range [][]byte{nil, {1, 0x64, 0, 0x1e, 0xff, 0xe1, 0, 50, 1}, {0, 1, 2, 3, 4, 5, 6}} {
		if _, err := ParseDecoderConfig(bad); err == nil {
			t.Errorf("ParseDecoderConfig(% x) accepted a bad record", bad)
		}
	}
	units := [][]byte{sps, pps, {0x65, 0x88}}
	if !IsKeyframe(units) || IsKeyframe(units[:2]) {
		t.Fatal("IsKeyframe")
	}
	if s, p := ParamSets(units); !bytes.Equal(s, sps) || !bytes.Equal(p, pps) {
		t.Fatal("ParamSets")
	}
}

// FuzzParseSPS parses arbitrary parameter sets and decoder records, which
// arrive from cameras (SDP, in-band) and FLV/MP4 publishers.
func FuzzParseSPS(f *testing.F) {
	f.Add(mustHexF("6764001eacd940a02ff97011000003000100000300320f162d96"))
	f.Add(mustHexF("67640028acd940780227e5c044000003000400000300c83c60c658"))
	f.Add([]byte{0x67, 0x64, 0, 0x1e, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseSPS(b); err == nil && (s.Width <= 0 || s.Height <= 0 || s.Width > 16384 || s.Height > 32768) {
			t.Fatalf("accepted a %dx%d picture", s.Width, s.Height)
		}
		ParseDecoderConfig(b)
	})
}

func mustHexF(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
