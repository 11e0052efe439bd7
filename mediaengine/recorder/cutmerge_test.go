package recorder

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// TestCutMergeAcrossFilesAndAGap records 6 s (three 2 s files), then after
// a pause of the recording another 4 s whose stream clock jumped an hour
// ahead; a cut/merge from the middle of the first file to the middle of
// the last one starts at a keyframe, copies every chosen fragment's mdat
// byte for byte, runs on without a gap (the hour is closed) and lists as
// many frames as the fragments it took; it is found by its id and deleted
// like a file, and a spans list with other tracks is refused.
func TestCutMergeAcrossFilesAndAGap(t *testing.T) {
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	root := t.TempDir()
	c := &collector{}
	r := newTestRecorder(t, h, root, c)
	path := media.Path{App: "live", Stream: "cam"}
	tracks := mediatest.Tracks()
	record := func(from, n int) {
		t.Helper()
		if _, err := r.Start(path, 0); err != nil {
			t.Fatal(err)
		}
		pub, err := h.Publish(path, hub.Origin{Kind: "test"}, tracks)
		if err != nil {
			t.Fatal(err)
		}
		publish(t, pub, tracks, from, n, 25)
		pub.Close()
		testkit.Eventually(t, 10*time.Second, "the stream's last file", func() bool { l := r.List(); return len(l) == 1 && l[0].State == "waiting" })
		if _, err := r.Stop(path); err != nil {
			t.Fatal(err)
		}
	}
	record(0, 150)
	record(25*3600, 100) // an hour later on the stream clock
	testkit.Eventually(t, 10*time.Second, "every report", func() bool { return len(c.got()) >= 5 })
	files := c.got()
	firstF, lastF := files[0], files[len(files)-1]

	spans := []Span{{FileID: firstF.FileID, From: 900 * time.Millisecond}}
	for _, f := range files[1 : len(files)-1] {
		spans = append(spans, Span{FileID: f.FileID})
	}
	spans = append(spans, Span{FileID: lastF.FileID, To: 1100 * time.Millisecond})
	const id = "01a20000-0000-7000-8000-00000000c0de"
	res, err := r.CutMerge(id, spans)
	if err != nil {
		t.Fatal(err)
	}
	if res.Gaps != 1 || res.Parts == 0 {
		t.Fatalf("result %+v, want one gap closed", res)
	}
	abs, x, err := r.Lookup(id)
	if err != nil || abs != filepath.Join(root, CutMergeDir, id+".mp4") || !x.Finished() || !x.Reported {
		t.Fatalf("lookup of the output: %s %+v %v", abs, x, err)
	}
	st, _ := os.Stat(abs)
	out, _ := os.Open(abs)
	frags, end, err := scanFragments(out, st.Size(), trackMap(x))
	out.Close()
	if err != nil || end != st.Size() || end != res.Size || len(frags) != res.Parts || len(frags) != len(x.Parts) {
		t.Fatalf("output: %d fragments to %d of %d (%v), result %+v", len(frags), end, st.Size(), err, res)
	}
	if !frags[0].key {
		t.Fatal("the output does not start at a keyframe")
	}
	var frames int64
	for i, f := range frags {
		frames += f.frames
		if i > 0 && (f.start-frags[i-1].end > gapTolerance || frags[i-1].end-f.start > gapTolerance) {
			t.Fatalf("fragment %d starts at %s, the previous ended at %s", i, f.start, frags[i-1].end)
		}
	}
	if uint64(frames) != res.Frames || x.Duration() != res.Duration.Truncate(time.Millisecond) {
		t.Fatalf("fragments hold %d frames, result %+v, index duration %s", frames, res, x.Duration())
	}
	// The covered media: the first file from its keyframe at or before
	// 0.9 s (0 s: a keyframe a second), the middle files whole, the last
	// up to its last frame decoded before 1.1 s: within a frame (40 ms).
	want := firstF.Duration + 1100*time.Millisecond
	for _, f := range files[1 : len(files)-1] {
		want += f.Duration
	}
	if res.Duration < want-50*time.Millisecond || res.Duration > want+10*time.Millisecond {
		t.Fatalf("the output covers %s, want %s to within a frame", res.Duration, want)
	}
	// Every frame is byte-identical to a source frame, and the output
	// holds as many as its result says.
	sources := map[string]bool{}
	for _, f := range files {
		sx, _ := readIndex(filepath.Join(root, f.Rel) + ".idx")
		for _, p := range sx.Parts {
			b, _ := readAt(filepath.Join(root, f.Rel), p.Offset, p.Size)
			for _, s := range samplesOf(t, b) {
				sources[string(s)] = true
			}
		}
	}
	var copied uint64
	for i, p := range x.Parts {
		b, _ := readAt(abs, p.Offset, p.Size)
		for _, s := range samplesOf(t, b) {
			if !sources[string(s)] {
				t.Fatalf("a frame of output part %d is not a source's", i)
			}
			copied++
		}
	}
	if copied != res.Frames {
		t.Fatalf("the output holds %d frames, its result says %d", copied, res.Frames)
	}
	// Again: the same output replaces the first.
	if again, err := r.CutMerge(id, spans); err != nil || again.Size != res.Size {
		t.Fatalf("repeated: %+v %v", again, err)
	}
	if err := r.Delete(id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Lookup(id); err == nil {
		t.Fatal("the deleted output is still found")
	}
	if _, err := r.CutMerge("../x", spans); err == nil {
		t.Fatal("an id with a separator was taken")
	}
	if _, err := r.CutMerge(id, []Span{{FileID: firstF.FileID, From: time.Hour, To: 2 * time.Hour}}); err == nil {
		t.Fatal("spans without media made an output")
	}
}

// samplesOf is the bytes of each sample of a fragment, found through its
// truns' data offsets and sizes.
func samplesOf(t *testing.T, frag []byte) [][]byte {
	t.Helper()
	boxes, err := fmp4.ReadBoxes(frag)
	if err != nil {
		t.Fatal(err)
	}
	moof := fmp4.Find(boxes, "moof")
	var out [][]byte
	for _, traf := range moof.Children {
		trun := fmp4.Find(traf.Children, "trun")
		if traf.Type != "traf" || trun == nil {
			continue
		}
		off, samples, err := fmp4.ParseTrun(trun.Data)
		if err != nil {
			t.Fatal(err)
		}
		pos := moof.Offset + int(off)
		for _, s := range samples {
			out = append(out, frag[pos:pos+int(s.Size)])
			pos += int(s.Size)
		}
	}
	return out
}
