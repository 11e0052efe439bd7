package recorder

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

const mib = 1 << 20

// smallVolume mounts a tmpfs of size bytes for the test (the recorder's
// watermarks need a filesystem that really fills up) and unmounts it at
// the end.
func smallVolume(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a tmpfs (the test runs as root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// publishBig writes n video frames of frameBytes (25 fps, a keyframe a
// second) so that a few seconds fill megabytes.
func publishBig(t *testing.T, pub *hub.Publisher, track *media.Track, from, n, frameBytes int) {
	t.Helper()
	body := make([]byte, frameBytes)
	for i := from; i < from+n; i++ {
		dts := time.Duration(i) * 40 * time.Millisecond
		key := i%25 == 0
		nal := append([]byte{0x41}, body...)
		if key {
			nal = append([]byte{0x65}, body...)
		}
		if err := pub.WriteFrame(&media.Frame{Track: track, DTS: dts, PTS: dts, Keyframe: key, NALUs: [][]byte{nal}}); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			time.Sleep(time.Millisecond) // let the recorder keep up with its queue
		}
	}
}

func newVolumeRecorder(t *testing.T, h *hub.Hub, root string, c *collector, wm Watermarks) *Recorder {
	t.Helper()
	r, err := New(h, Config{Root: root, SegmentDuration: 2 * time.Second, SegmentMaxBytes: 1 << 30, PartDuration: 300 * time.Millisecond,
		Report: c.report, Watermarks: wm}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// TestVolumeRetentionPrunesOldest records about 12 MB in 1 MB files onto
// an 8 MiB tmpfs with a 3 MiB low watermark and retention: the engine
// never errors nor refuses a file, the oldest files are deleted (and
// listed for the control plane), the newest stay, and the volume ends
// above its full watermark.
func TestVolumeRetentionPrunesOldest(t *testing.T) {
	root := smallVolume(t, "8m")
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	c := &collector{}
	r := newVolumeRecorder(t, h, root, c, Watermarks{LowSpaceBytes: 3 * mib, FullBytes: mib, Retention: true})
	v, err := r.Volume()
	if err != nil || v.State != engineapi.VolumeNormal || v.TotalBytes != 8*mib || v.FilesystemID == "" {
		t.Fatalf("a fresh volume: %+v, %v", v, err)
	}
	path := media.Path{App: "live", Stream: "big"}
	if _, err := r.Start(path, 0); err != nil {
		t.Fatal(err)
	}
	track := mediatest.Tracks()[0]
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, []*media.Track{track})
	if err != nil {
		t.Fatal(err)
	}
	publishBig(t, pub, track, 0, 600, 20_000) // 24 s, 12 MB in 2 s files
	pub.Close()
	testkit.Eventually(t, 20*time.Second, "the last file", func() bool { l := r.List(); return len(l) == 1 && l[0].State == "waiting" })
	info, err := r.Stop(path)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "every report", func() bool { return len(c.got()) == info.Files })
	v, err = r.Volume()
	if err != nil {
		t.Fatal(err)
	}
	if v.Refused != 0 || len(v.PrunedFileIDs) < 4 || v.FreeBytes < v.LowSpaceBytes || v.State != engineapi.VolumeNormal {
		t.Fatalf("after 12 MB on 8 MiB: %d files, volume %+v", info.Files, v)
	}
	pruned := map[string]bool{}
	for _, id := range v.PrunedFileIDs {
		pruned[id] = true
	}
	// Files are reported in the order they finished: the pruned ones are
	// a prefix, the rest are still on the disk and findable.
	files := c.got()
	for i, f := range files {
		_, statErr := os.Stat(filepath.Join(root, f.Rel))
		_, _, lookErr := r.Lookup(f.FileID)
		switch {
		case i < len(v.PrunedFileIDs) && (!pruned[f.FileID] || statErr == nil || lookErr == nil):
			t.Fatalf("file %d (%s) should have been pruned first: pruned %v, stat %v, lookup %v", i, f.Rel, pruned[f.FileID], statErr, lookErr)
		case i >= len(v.PrunedFileIDs) && (pruned[f.FileID] || statErr != nil || lookErr != nil):
			t.Fatalf("file %d (%s) is newer than the pruned ones but gone: stat %v, lookup %v", i, f.Rel, statErr, lookErr)
		}
	}
	var frames uint64
	for _, f := range files {
		frames += f.Frames
	}
	if frames != 600 {
		t.Fatalf("the files hold %d frames of 600 published: retention lost media being written", frames)
	}
}

// TestVolumeFullRefusesNewFiles fills an 8 MiB tmpfs below its full
// watermark: recording a stream starts no file (the refusals are
// counted, the state is Full), and once the filler is removed the same
// recording starts writing at the next keyframe by itself.
func TestVolumeFullRefusesNewFiles(t *testing.T) {
	root := smallVolume(t, "8m")
	filler := filepath.Join(root, "filler")
	if err := os.WriteFile(filler, make([]byte, 7*mib), 0o600); err != nil {
		t.Fatal(err)
	}
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	c := &collector{}
	r := newVolumeRecorder(t, h, root, c, Watermarks{LowSpaceBytes: 3 * mib, FullBytes: 2 * mib})
	v, err := r.Volume()
	if err != nil || v.State != engineapi.VolumeFull {
		t.Fatalf("a volume with %d bytes free: %+v, %v", v.FreeBytes, v, err)
	}
	path := media.Path{App: "live", Stream: "full"}
	if _, err := r.Start(path, 0); err != nil {
		t.Fatal(err)
	}
	track := mediatest.Tracks()[0]
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, []*media.Track{track})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a live camera: small frames in real time until stopped
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
			dts := time.Duration(i) * 40 * time.Millisecond
			key := i%25 == 0
			nal := []byte{0x41, byte(i), 0x9a}
			if key {
				nal = []byte{0x65, byte(i), 0x88}
			}
			if pub.WriteFrame(&media.Frame{Track: track, DTS: dts, PTS: dts, Keyframe: key, NALUs: [][]byte{nal}}) != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	testkit.Eventually(t, 10*time.Second, "a refused file", func() bool { v, _ := r.Volume(); return v.Refused > 0 })
	if l := r.List(); len(l) != 1 || l[0].Bytes != 0 {
		t.Fatalf("a full volume was written: %+v", l)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "writing after space was freed", func() bool { l := r.List(); return len(l) == 1 && l[0].Bytes > 0 })
	if v, _ := r.Volume(); v.State != engineapi.VolumeNormal {
		t.Fatalf("after freeing: %+v", v)
	}
}
