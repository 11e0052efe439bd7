package flv

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
)

var (
	sps = mediatest.H264SPS
	pps = mediatest.H264PPS
)

func TestMuxerTagsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		audio media.Codec
	}{{"aac", media.CodecAAC}, {"pcma", media.CodecPCMA}, {"pcmu", media.CodecPCMU}} {
		t.Run(tc.name, func(t *testing.T) {
			v := &media.Track{ID: 0, Codec: media.CodecH264, SPS: sps, PPS: pps, Width: 640, Height: 360}
			a := &media.Track{ID: 1, Codec: tc.audio, SampleRate: 8000, Channels: 1, AudioSpecificConfig: []byte{0x15, 0x88}}
			m, err := NewMuxer([]*media.Track{v, a})
			if err != nil {
				t.Fatal(err)
			}
			var stream bytes.Buffer
			stream.Write(m.Header())
			frames := []*media.Frame{
				{Track: v, DTS: 3600 * time.Second, PTS: 3600*time.Second + 80*time.Millisecond, Keyframe: true, NALUs: [][]byte{sps, pps, {0x65, 1, 2}}},
				{Track: a, DTS: 3600 * time.Second, Payload: []byte{1, 2, 3}},
				{Track: v, DTS: 3600*time.Second + 40*time.Millisecond, PTS: 3600*time.Second + 40*time.Millisecond, NALUs: [][]byte{{0x41, 9}}},
			}
			for _, f := range frames {
				p, ok := m.Frame(f)
				if !ok || p.Keyframe != (f.Keyframe) {
					t.Fatalf("frame not muxed or keyframe flag wrong: %v", ok)
				}
				stream.Write(p.Data)
			}
			r := NewReader(&stream)
			var types []byte
			var last Tag
			for {
				tag, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				types = append(types, tag.Type)
				last = tag
				if tag.Type == TagVideo && tag.Timestamp == 3600000 {
					key, seq, _ := VideoInfo(tag.Data)
					if !key || seq || tag.Data[4] != 80 {
						t.Fatalf("first frame tag: key %v seq %v cts %d", key, seq, tag.Data[4])
					}
				}
			}
			want := []byte{TagScript, TagVideo, TagAudio, TagVideo, TagAudio, TagVideo}
			if tc.audio != media.CodecAAC {
				want = []byte{TagScript, TagVideo, TagVideo, TagAudio, TagVideo}
			}
			if !bytes.Equal(types, want) || last.Timestamp != 3600040 || !r.HasAudio || !r.HasVideo {
				t.Fatalf("tags %v (want %v), last at %d", types, want, last.Timestamp)
			}
		})
	}
}

func TestReaderRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"not flv", []byte("GIF89a.........")},
		{"bad previous size", append(Header(true, true), TagAudio, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xaf, 0, 0, 0, 99)},
		{"huge tag", append(Header(true, true), TagAudio, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewReader(bytes.NewReader(tc.in)).Next(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// FuzzReader reads arbitrary bytes as FLV: no panic, no allocation beyond
// MaxTagSize.
func FuzzReader(f *testing.F) {
	m, _ := NewMuxer([]*media.Track{{ID: 0, Codec: media.CodecH264, SPS: sps, PPS: pps}})
	f.Add(m.Header())
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for i := 0; i < 1000; i++ {
			tag, err := r.Next()
			if err != nil {
				return
			}
			if tag.Type == TagVideo {
				VideoInfo(tag.Data)
			}
		}
	})
}
