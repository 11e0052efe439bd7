package recorder

import (
	"bytes"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
)

// FuzzScanFragments feeds arbitrary bytes to the repair path's fragment
// scanner: a file cut anywhere or overwritten must give an error or
// fragments inside the input, never a panic or a read past the end.
func FuzzScanFragments(f *testing.F) {
	f.Add([]byte{0, 0, 0, 8, 'f', 't', 'y', 'p'})
	f.Add([]byte{0, 0, 0, 16, 'm', 'o', 'o', 'f', 0, 0, 0, 8, 't', 'r', 'a', 'f', 0, 0, 0, 8, 'm', 'd', 'a', 't'})
	f.Add([]byte{0, 0, 0, 1, 'm', 'd', 'a', 't', 0, 0, 0, 0, 0, 0, 0, 16})
	tracks := map[uint32]indexTrack{1: {ID: 1, Codec: "H264", Timescale: 90000}, 2: {ID: 2, Codec: "AAC", Timescale: 48000}}
	f.Fuzz(func(t *testing.T, b []byte) {
		frags, end, err := scanFragments(bytes.NewReader(b), int64(len(b)), tracks)
		if err != nil {
			return
		}
		if end > int64(len(b)) {
			t.Fatalf("end %d past %d bytes", end, len(b))
		}
		for _, fr := range frags {
			if fr.off < 0 || fr.off+fr.size > int64(len(b)) {
				t.Fatalf("fragment %+v outside %d bytes", fr, len(b))
			}
		}
	})
}

// FuzzParseIndex feeds arbitrary sidecars to the index reader.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"t":"head","v":1,"fileId":"x","startTime":"2026-01-01T00:00:00Z"}` + "\n" + `{"t":"part","off":10,"size":5}` + "\n"))
	f.Add([]byte(`{"t":"part"}`))
	f.Fuzz(func(_ *testing.T, b []byte) {
		parseIndex(b)
	})
}

// FuzzRetime feeds arbitrary fragments to cut/merge's readers and
// rewriter (a source file may be damaged on disk): an error or a
// rewrite within the fragment's own bytes, never a panic.
func FuzzRetime(f *testing.F) {
	tracks := mediatest.Tracks()
	f.Add(fmp4.Fragment(7, []fmp4.Run{{Track: tracks[0], BaseTime: 90000 * 11, Samples: []fmp4.Sample{{Frame: &media.Frame{Track: tracks[0],
		Keyframe: true, NALUs: [][]byte{{0x65, 1, 2}}}, Duration: 3600}}}}))
	f.Add([]byte{0, 0, 0, 16, 'm', 'o', 'o', 'f', 0, 0, 0, 8, 't', 'r', 'a', 'f'})
	scales := map[uint32]uint32{1: 90000, 2: 48000}
	f.Fuzz(func(t *testing.T, b []byte) {
		n := len(b)
		if _, err := fragmentTimes(b, scales); err != nil {
			return
		}
		if err := retime(b, 3, 1500*time.Millisecond, scales); err != nil {
			return
		}
		if len(b) != n {
			t.Fatalf("retime changed the length from %d to %d", n, len(b))
		}
	})
}
