package flv

import (
	"bytes"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
)

func TestContinueAnnouncesOnlyWhatChanged(t *testing.T) {
	base := mediatest.Tracks()
	newSPS := mediatest.Tracks()
	newSPS[0].SPS = append([]byte(nil), newSPS[0].SPS...)
	newSPS[0].SPS[len(newSPS[0].SPS)-1] ^= 1
	newASC := mediatest.Tracks()
	newASC[1].AudioSpecificConfig = []byte{0x12, 0x10}
	videoOnly := mediatest.Tracks()[:1]
	g711 := mediatest.Tracks()
	g711[1] = &media.Track{ID: 1, Codec: media.CodecPCMA, ClockRate: 8000, SampleRate: 8000, Channels: 1}
	cases := []struct {
		name       string
		next       []*media.Track
		wantHeader bool // a whole new FLV header
		wantTags   []byte
	}{
		{"same tracks", base, false, nil},
		{"a new SPS", newSPS, false, []byte{TagScript, TagVideo}},
		{"a new AAC configuration", newASC, false, []byte{TagScript, TagAudio}},
		{"audio lost", videoOnly, true, nil},
		{"another audio codec", g711, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMuxer(tc.next)
			if err != nil {
				t.Fatal(err)
			}
			got := m.Continue(base, 1500*time.Millisecond)
			switch {
			case tc.wantHeader:
				if !bytes.Equal(got, m.Header()) || !bytes.HasPrefix(got, []byte("FLV")) {
					t.Fatalf("want the whole header, got %d bytes", len(got))
				}
			case tc.wantTags == nil:
				if got != nil {
					t.Fatalf("want nothing, got %d bytes", len(got))
				}
			default:
				r := NewReader(bytes.NewReader(append(Header(true, true), got...)))
				var types []byte
				for {
					tag, err := r.Next()
					if err != nil {
						break
					}
					if tag.Timestamp != 1500 {
						t.Fatalf("tag %d at %d ms, want 1500", tag.Type, tag.Timestamp)
					}
					types = append(types, tag.Type)
				}
				if !bytes.Equal(types, tc.wantTags) {
					t.Fatalf("tags %v, want %v", types, tc.wantTags)
				}
			}
		})
	}
}
