package recorder

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// collector is a Report function that keeps what it is given.
type collector struct {
	mu    sync.Mutex
	files []FileInfo
	fail  bool
}

func (c *collector) report(_ context.Context, f FileInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return os.ErrDeadlineExceeded
	}
	c.files = append(c.files, f)
	return nil
}

func (c *collector) got() []FileInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]FileInfo(nil), c.files...)
}

// publish writes n video frames (25 fps, a keyframe every gop) and the
// AAC frames between them (48 kHz, 1024 samples) into pub, as fast as the
// hub takes them, and answers how many frames it wrote.
func publish(t *testing.T, pub *hub.Publisher, tracks []*media.Track, from, n, gop int) int {
	t.Helper()
	const frame = 40 * time.Millisecond
	audio := time.Duration(1024) * time.Second / 48000
	nextAudio := time.Duration(from) * frame
	written := 0
	for i := from; i < from+n; i++ {
		dts := time.Duration(i) * frame
		key := i%gop == 0
		nal := []byte{0x41, byte(i), 0x9a, 0x10}
		if key {
			nal = []byte{0x65, byte(i), 0x88, 0x80}
		}
		if err := pub.WriteFrame(&media.Frame{Track: tracks[0], DTS: dts, PTS: dts, Keyframe: key, NALUs: [][]byte{nal}}); err != nil {
			t.Fatal(err)
		}
		written++
		for nextAudio < dts+frame {
			if err := pub.WriteFrame(&media.Frame{Track: tracks[1], DTS: nextAudio, PTS: nextAudio, Payload: []byte{0x21, 0x10, 0x04}}); err != nil {
				t.Fatal(err)
			}
			nextAudio += audio
			written++
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // let the recorder keep up with its queue
		}
	}
	return written
}

func newTestRecorder(t *testing.T, h *hub.Hub, root string, c *collector) *Recorder {
	t.Helper()
	r, err := New(h, Config{Root: root, SegmentDuration: 2 * time.Second, SegmentMaxBytes: 1 << 30, PartDuration: 300 * time.Millisecond,
		Report: c.report}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// TestRecorderSegmentsAndReports records 250 frames (10 s, a keyframe a
// second) in 2 s segments: five or six files whose frames add up to what
// was published, each reported once with its index, every part a whole
// fragment that starts where the sidecar says.
func TestRecorderSegmentsAndReports(t *testing.T) {
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	root := t.TempDir()
	c := &collector{}
	r := newTestRecorder(t, h, root, c)
	path := media.Path{App: "live", Stream: "cam"}
	if _, err := r.Start(path, 0); err != nil {
		t.Fatal(err)
	}
	tracks := mediatest.Tracks()
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	published := publish(t, pub, tracks, 0, 250, 25)
	pub.Close()
	testkit.Eventually(t, 10*time.Second, "the last file", func() bool { l := r.List(); return len(l) == 1 && l[0].State == "waiting" })
	info, err := r.Stop(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Stop(path); err == nil {
		t.Fatal("a second stop succeeded")
	}
	testkit.Eventually(t, 10*time.Second, "every report", func() bool { return len(c.got()) == info.Files })
	var frames uint64
	for _, f := range c.got() {
		frames += f.Frames
		x, err := readIndex(filepath.Join(root, f.Rel) + ".idx")
		if err != nil {
			t.Fatal(err)
		}
		if !x.Finished() || x.FileID() != f.FileID {
			t.Fatalf("%s: sidecar %+v", f.Rel, x)
		}
		testkit.Eventually(t, 5*time.Second, "the reported mark", func() bool { x, _ := readIndex(filepath.Join(root, f.Rel) + ".idx"); return x.Reported })
		st, _ := os.Stat(filepath.Join(root, f.Rel))
		if st.Size() != f.Size {
			t.Fatalf("%s: %d bytes on disk, %d reported", f.Rel, st.Size(), f.Size)
		}
		file, _ := os.Open(filepath.Join(root, f.Rel))
		frags, end, err := scanFragments(file, st.Size(), trackMap(x))
		file.Close()
		if err != nil || end != st.Size() || len(frags) != len(x.Parts) {
			t.Fatalf("%s: %d fragments to %d (%v), sidecar lists %d parts", f.Rel, len(frags), end, err, len(x.Parts))
		}
		var pf int64
		for i, p := range x.Parts {
			if frags[i].off != p.Offset || frags[i].size != p.Size || frags[i].frames != p.Frames || frags[i].key != p.Key {
				t.Fatalf("%s part %d: sidecar %+v, file %+v", f.Rel, i, p, frags[i])
			}
			pf += p.Frames
		}
		if !x.Parts[0].Key || uint64(pf) != f.Frames {
			t.Fatalf("%s: first part key %v, parts hold %d frames of %d", f.Rel, x.Parts[0].Key, pf, f.Frames)
		}
		b, err := os.ReadFile(filepath.Join(root, f.Rel))
		if err != nil {
			t.Fatal(err)
		}
		checkSidx(t, b, x)
		p := mediaprobe.ProbeFile(t, filepath.Join(root, f.Rel))
		if uint64(len(p.Packets)) != f.Frames {
			t.Fatalf("%s: ffprobe reads %d packets, the recorder wrote %d", f.Rel, len(p.Packets), f.Frames)
		}
	}
	if frames != uint64(published) || len(c.got()) < 5 {
		t.Fatalf("%d files hold %d frames, published %d", len(c.got()), frames, published)
	}
}

func trackMap(x *Index) map[uint32]indexTrack {
	m := map[uint32]indexTrack{}
	for _, t := range x.head.Tracks {
		m[t.ID] = t
	}
	return m
}

// TestRepairOpenSegment copies a file while it is being written (what a
// crash leaves), tears its end mid-fragment and lets a recorder on the
// copy's root repair it: the file ends at its last whole fragment, the
// sidecar is rebuilt from the fragments, and the file is reported once,
// also across another restart.
func TestRepairOpenSegment(t *testing.T) {
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	root := t.TempDir()
	r := newTestRecorder(t, h, root, &collector{fail: true})
	path := media.Path{App: "live", Stream: "cam"}
	if _, err := r.Start(path, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	tracks := mediatest.Tracks()
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, pub, tracks, 0, 100, 25)
	var rel string
	testkit.Eventually(t, 10*time.Second, "parts on disk", func() bool {
		l := r.List()
		if len(l) != 1 || l[0].FileID == "" || l[0].Frames < 100 {
			return false
		}
		filepath.WalkDir(root, func(p string, d os.DirEntry, _ error) error {
			if strings.HasSuffix(p, ".mp4") {
				rel, _ = filepath.Rel(root, p)
			}
			return nil
		})
		return rel != ""
	})
	crashed := t.TempDir()
	mp4, _ := os.ReadFile(filepath.Join(root, rel))
	idx, _ := os.ReadFile(filepath.Join(root, rel) + ".idx")
	before, err := parseIndex(idx)
	if err != nil || before.Finished() || len(before.Parts) < 3 {
		t.Fatalf("open sidecar: %+v %v", before, err)
	}
	whole := len(mp4)
	// A torn fragment: a moof header that promises more than is there.
	mp4 = append(mp4, 0, 0, 0x10, 0, 'm', 'o', 'o', 'f', 1, 2, 3)
	// And an index write cut short in the space reserved for it: an sidx
	// header over half of it, zeros after (boxes that no longer chain).
	copy(mp4[before.InitSize():], []byte{0, 0, byte(before.head.SidxSpace / 2 >> 8), byte(before.head.SidxSpace / 2), 's', 'i', 'd', 'x'})
	clear(mp4[before.InitSize()+8 : before.InitSize()+before.head.SidxSpace])
	idx = append(idx, []byte(`{"t":"part","off":`)...) // and a torn sidecar line
	os.MkdirAll(filepath.Dir(filepath.Join(crashed, rel)), 0o750)
	os.WriteFile(filepath.Join(crashed, rel), mp4, 0o640)
	os.WriteFile(filepath.Join(crashed, rel)+".idx", idx, 0o640)

	c := &collector{}
	h2 := hub.New(hub.Config{}, zaptest.NewLogger(t))
	defer h2.Close()
	r2 := newTestRecorder(t, h2, crashed, c)
	repaired, queued, err := r2.Repair()
	if err != nil || repaired != 1 || queued != 1 {
		t.Fatalf("repair: %d repaired, %d queued, %v", repaired, queued, err)
	}
	testkit.Eventually(t, 5*time.Second, "the report", func() bool { return len(c.got()) == 1 })
	f := c.got()[0]
	st, _ := os.Stat(filepath.Join(crashed, rel))
	if f.Reason != ReasonRepaired || f.FileID != before.FileID() || st.Size() != int64(whole) || f.Size != int64(whole) {
		t.Fatalf("repaired %+v, %d bytes on disk, %d whole", f, st.Size(), whole)
	}
	after, err := readIndex(filepath.Join(crashed, rel) + ".idx")
	if err != nil || !after.Finished() || len(after.Parts) < len(before.Parts) {
		t.Fatalf("rebuilt sidecar %+v %v (open one had %d parts)", after, err, len(before.Parts))
	}
	for i, p := range before.Parts {
		// Times come back from the fragments' ticks: within a millisecond.
		q := after.Parts[i]
		q.At, q.Duration = p.At, p.Duration
		if d := (after.Parts[i].At - p.At).Abs() + (after.Parts[i].Duration - p.Duration).Abs(); q != p || d > 2*time.Millisecond {
			t.Fatalf("part %d: rebuilt %+v, written %+v", i, after.Parts[i], p)
		}
	}
	repairedMP4, err := os.ReadFile(filepath.Join(crashed, rel))
	if err != nil {
		t.Fatal(err)
	}
	checkSidx(t, repairedMP4, after)
	p := mediaprobe.ProbeFile(t, filepath.Join(crashed, rel))
	if uint64(len(p.Packets)) != f.Frames || f.Duration < 3*time.Second {
		t.Fatalf("ffprobe reads %d packets; repaired file holds %d frames, %s", len(p.Packets), f.Frames, f.Duration)
	}
	testkit.Eventually(t, 5*time.Second, "the reported mark", func() bool { x, _ := readIndex(filepath.Join(crashed, rel) + ".idx"); return x.Reported })
	r3 := newTestRecorder(t, h2, crashed, c)
	if repaired, queued, err := r3.Repair(); repaired != 0 || queued != 0 || err != nil {
		t.Fatalf("second start: %d repaired, %d queued, %v", repaired, queued, err)
	}
	pub.Close()
}
