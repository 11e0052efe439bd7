package recorder

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// TestRetentionByAge records 1 s files while a stream stays live, makes a
// cut/merge output, and lets two more files finish while the control
// plane refuses their reports. With every file on disk an hour old, a
// maxAge of a minute (applied to the running recorder, as a configuration
// reload does) deletes exactly the finished, reported recordings: not the
// open file, not the unreported ones, not the output; recording goes on,
// and once the reports get through the sweep takes those files too, but
// not the files finished since.
func TestRetentionByAge(t *testing.T) {
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	root := t.TempDir()
	c := &collector{}
	r, err := New(h, Config{Root: root, SegmentDuration: time.Second, SegmentMaxBytes: 1 << 30, PartDuration: 300 * time.Millisecond,
		Report: c.report}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	path := media.Path{App: "live", Stream: "age"}
	if _, err := r.Start(path, 0); err != nil {
		t.Fatal(err)
	}
	tracks := mediatest.Tracks()
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	publish(t, pub, tracks, 0, 150, 25) // five finished files, the sixth open
	testkit.Eventually(t, 20*time.Second, "five reports", func() bool { return len(c.got()) == 5 })
	reported := c.got()
	for _, f := range reported {
		testkit.Eventually(t, 10*time.Second, "the reported mark", func() bool { x, _ := readIndex(filepath.Join(root, f.Rel) + ".idx"); return x.Reported })
	}
	const outID = "01a20000-0000-7000-8000-0000000a9e01"
	if _, err := r.CutMerge(outID, []Span{{FileID: reported[0].FileID}, {FileID: reported[1].FileID}}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.fail = true
	c.mu.Unlock()
	publish(t, pub, tracks, 150, 50, 25) // two more finished, unreported
	testkit.Eventually(t, 20*time.Second, "seven files and the open one", func() bool {
		l := r.List()
		return len(l) == 1 && l[0].Files == 7 && l[0].FileID != ""
	})

	// Every finished file is made an hour old. The open file is left
	// alone: it is still being written, so its time cannot be in the past
	// (made old too, it looked old when it finished without another write
	// and was pruned, which no real disk does).
	hourAgo := time.Now().Add(-time.Hour)
	open := r.List()[0].FileID
	filepath.WalkDir(root, func(p string, d os.DirEntry, _ error) error {
		// No open file (between a file's end and the next frame): all are
		// finished.
		if !d.IsDir() && (open == "" || !strings.Contains(filepath.Base(p), "-"+open[len(open)-8:]+".")) {
			os.Chtimes(p, hourAgo, hourAgo)
		}
		return nil
	})
	r.SetWatermarks(Watermarks{MaxAge: time.Minute})
	testkit.Eventually(t, 20*time.Second, "the reported files pruned", func() bool {
		v, err := r.Volume()
		return err == nil && len(v.PrunedFileIDs) == 5
	})
	v, _ := r.Volume()
	for _, f := range reported {
		if !slices.Contains(v.PrunedFileIDs, f.FileID) {
			t.Fatalf("pruned %v, not the reported %s", v.PrunedFileIDs, f.FileID)
		}
		if _, err := os.Stat(filepath.Join(root, f.Rel)); !os.IsNotExist(err) {
			t.Fatalf("%s is still on disk: %v", f.Rel, err)
		}
	}
	if v.MaxAgeSeconds != 60 || slices.Contains(v.PrunedFileIDs, open) {
		t.Fatalf("volume %+v (open file %s)", v, open)
	}
	if _, _, err := r.Lookup(outID); err != nil {
		t.Fatalf("the cut/merge output: %v", err)
	}
	publish(t, pub, tracks, 200, 50, 25) // recording goes on: the open file finishes
	testkit.Eventually(t, 20*time.Second, "nine files", func() bool { l := r.List(); return len(l) == 1 && l[0].Files == 9 })

	c.mu.Lock()
	c.fail = false
	c.mu.Unlock()
	// The two late-reported files go once reported; the file that was
	// open finished just now, like the newest, and both are young.
	// The reporter's backoff reached up to 30 s while reports failed, and
	// the sweep runs every 15 s: up to 45 s, more on a loaded machine.
	testkit.Eventually(t, 90*time.Second, "the late-reported files pruned", func() bool {
		v, err := r.Volume()
		return err == nil && len(v.PrunedFileIDs) == 7 && len(c.got()) == 9
	})
	v, _ = r.Volume()
	if slices.Contains(v.PrunedFileIDs, open) {
		t.Fatalf("pruned %v; %d reports", v.PrunedFileIDs, len(c.got()))
	}
	if _, _, err := r.Lookup(outID); err != nil {
		t.Fatalf("the cut/merge output: %v", err)
	}
}
