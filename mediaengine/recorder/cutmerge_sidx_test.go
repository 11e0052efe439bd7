package recorder

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// TestCutMergeOutputSeeksByItsSegmentIndex records 40 s of ffmpeg's
// H.264+AAC in 10 s files and cuts from 5 s into the first to 5 s into
// the last. Like a recording, the output carries after its init an sidx
// per track whose references start at its keyframe parts, carry their
// decode times and end at the file's end (checkSidx), and its sidecar
// says so; ffprobe reads the same packets as from the same output with
// that space left a free box; ffmpeg seeking to 20 s over HTTP Range reads
// a small share of it, which it cannot without the index.
func TestCutMergeOutputSeeksByItsSegmentIndex(t *testing.T) {
	dir := t.TempDir()
	ffmpegRun(t, dir, "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "40", "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-bf", "0", "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "mpegts", "clip.ts")
	clip, err := filesource.LoadFile(filepath.Join(dir, "clip.ts"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	c := &collector{}
	r := newTestRecorder(t, h, t.TempDir(), c)
	path := media.Path{App: "live", Stream: "cut"}
	if _, err := r.Start(path, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, clip.Tracks)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range clip.Frames {
		if err := pub.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // let the recorder keep up with its queue
		}
	}
	pub.Close()
	testkit.Eventually(t, 30*time.Second, "the last file", func() bool { l := r.List(); return len(l) == 1 && l[0].State == "waiting" })
	info, err := r.Stop(path)
	if err != nil || info.Dropped != 0 {
		t.Fatalf("stop: %+v %v", info, err)
	}
	testkit.Eventually(t, 30*time.Second, "every report", func() bool { return len(c.got()) == info.Files })
	files := c.got()
	if len(files) < 3 {
		t.Fatalf("%d files, want at least three", len(files))
	}
	sort.Slice(files, func(i, j int) bool { return files[i].StartTime.Before(files[j].StartTime) })
	spans := []Span{{FileID: files[0].FileID, From: 5 * time.Second}}
	for _, f := range files[1 : len(files)-1] {
		spans = append(spans, Span{FileID: f.FileID})
	}
	spans = append(spans, Span{FileID: files[len(files)-1].FileID, To: 5 * time.Second})
	const id = "01a20000-0000-7000-8000-00000000519d"
	res, err := r.CutMerge(id, spans)
	if err != nil {
		t.Fatal(err)
	}
	abs, x, err := r.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(abs)
	if err != nil || int64(len(b)) != res.Size {
		t.Fatalf("output of %d bytes, result %+v: %v", len(b), res, err)
	}
	if x.head.SidxSpace == 0 || x.Parts[0].Offset != x.InitSize()+x.head.SidxSpace {
		t.Fatalf("sidecar: space %d, first part at %d after an init of %d", x.head.SidxSpace, x.Parts[0].Offset, x.InitSize())
	}
	checkSidx(t, b, x)
	probe := mediaprobe.ProbeFile(t, abs)
	if uint64(len(probe.Packets)) != res.Frames {
		t.Fatalf("ffprobe reads %d packets, the output holds %d frames", len(probe.Packets), res.Frames)
	}
	bare := filepath.Join(dir, "bare.mp4")
	copy(b[x.InitSize():], freeBox(x.head.SidxSpace))
	if err := os.WriteFile(bare, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if p := mediaprobe.ProbeFile(t, bare); !reflect.DeepEqual(p.Packets, probe.Packets) {
		t.Fatalf("ffprobe reads %d packets with the index and %d, not the same, without", len(probe.Packets), len(p.Packets))
	}

	with, seeks, without, seeksWithout := seekOverRange(t, abs, bare, 20)
	t.Logf("ffmpeg -ss 20 over Range read %d bytes of %d (%d seeks) with the index, %d (%d seeks) without", with, len(b), seeks, without, seeksWithout)
	if with > int64(len(b))/4 || without <= int64(len(b))/2 {
		t.Fatalf("ffmpeg read %d bytes of %d to seek with the index, %d without", with, len(b), without)
	}
}
