package h265

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
)

// The parameter sets were written by ffmpeg's libx265 (testsrc2, Main
// profile).
const (
	vps640  = "40010c01ffff01600000030090000003000003003f959809"
	sps640  = "42010101600000030090000003000003003fa00502016965959a4932bc05a020000003002000000303c1"
	sps1080 = "420101016000000300900000030000030078a003c08010e596566924caf0168080000003008000000f04"
	pps     = "4401c172b46240"
)

func TestParseSPS(t *testing.T) {
	for _, tc := range []struct {
		sps           string
		width, height int
		level         uint8
	}{{sps640, 640, 360, 63}, {sps1080, 1920, 1080, 120}} {
		s, err := ParseSPS(mediatest.MustHex(t, tc.sps))
		if err != nil {
			t.Fatal(err)
		}
		if s.Width != tc.width || s.Height != tc.height || s.PTL.ProfileIDC != 1 || s.PTL.LevelIDC != tc.level || s.ChromaFormat != 1 {
			t.Fatalf("got %+v, want %dx%d level %d", s, tc.width, tc.height, tc.level)
		}
	}
	if _, err := ParseSPS(mediatest.MustHex(t, pps)); !errors.Is(err, ErrNotSPS) {
		t.Fatalf("a PPS parsed as SPS: %v", err)
	}
	if _, err := ParseSPS(mediatest.MustHex(t, sps640)[:16]); err == nil {
		t.Fatal("a truncated SPS parsed")
	}
}

func TestDecoderConfigRoundTrip(t *testing.T) {
	v, s, p := mediatest.MustHex(t, vps640), mediatest.MustHex(t, sps640), mediatest.MustHex(t, pps)
	c, err := NewDecoderConfig(v, s, p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDecoderConfig(c.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if back.LengthSize != 4 || back.PTL != c.PTL || !bytes.Equal(back.SPS[0], s) || !bytes.Equal(back.VPS[0], v) || !bytes.Equal(back.PPS[0], p) {
		t.Fatalf("round trip: %+v", back)
	}
	if got := back.Codec(); got != "hvc1.1.6.L63.90" {
		t.Fatalf("codec string %q", got)
	}
	if _, err := ParseDecoderConfig(c.Marshal()[:30]); err == nil {
		t.Fatal("a truncated record parsed")
	}
	units := [][]byte{v, s, p, {0x26, 0x01, 0xaf}}
	if !IsKeyframe(units) || IsKeyframe([][]byte{{0x02, 0x01}}) {
		t.Fatal("IsKeyframe")
	}
}

// FuzzParseSPS parses arbitrary parameter sets and decoder records.
func FuzzParseSPS(f *testing.F) {
	for _, s := range []string{sps640, sps1080} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
		c, _ := NewDecoderConfig(b, b, b)
		f.Add(c.Marshal())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseSPS(b); err == nil && (s.Width <= 0 || s.Height <= 0) {
			t.Fatalf("accepted a %dx%d picture", s.Width, s.Height)
		}
		ParseDecoderConfig(b)
	})
}
