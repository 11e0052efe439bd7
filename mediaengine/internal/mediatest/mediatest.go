// Package mediatest holds real parameter sets for the engine's tests, so
// every package tests against the same bytes an encoder wrote.
package mediatest

import (
	"encoding/hex"
	"testing"

	"github.com/svcplatform/svc/mediaengine/media"
)

// H.264 parameter sets of a 640x360 25 fps stream written by ffmpeg's
// libx264 (testsrc2, high profile, level 3.0).
var (
	H264SPS = []byte{0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2d, 0x96}
	H264PPS = []byte{0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0}
)

// Tracks is an H.264 640x360 video track and a 48 kHz stereo AAC track,
// ready, with IDs 0 and 1.
func Tracks() []*media.Track {
	return []*media.Track{
		{ID: 0, Codec: media.CodecH264, ClockRate: 90000, SPS: H264SPS, PPS: H264PPS, Width: 640, Height: 360},
		{ID: 1, Codec: media.CodecAAC, ClockRate: 48000, SampleRate: 48000, Channels: 2, AudioSpecificConfig: []byte{0x11, 0x90}},
	}
}

// MustHex decodes a hex string written in a test.
func MustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
