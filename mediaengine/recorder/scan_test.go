package recorder

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// TestScanListsWhatIsOnDisk scans a root while a stream is recorded: the
// finished files are listed, the open one is neither listed nor touched,
// a file removed by hand is forgotten (no longer found by id), and a
// finished file put on the root from elsewhere becomes findable.
func TestScanListsWhatIsOnDisk(t *testing.T) {
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	root := t.TempDir()
	c := &collector{}
	r := newTestRecorder(t, h, root, c)
	path := media.Path{App: "live", Stream: "scan"}
	if _, err := r.Start(path, time.Second); err != nil {
		t.Fatal(err)
	}
	tracks := mediatest.Tracks()
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	publish(t, pub, tracks, 0, 100, 25) // three finished files, the fourth open
	testkit.Eventually(t, 20*time.Second, "three reports", func() bool { return len(c.got()) == 3 })
	testkit.Eventually(t, 20*time.Second, "the open file written", func() bool { l := r.List(); return l[0].FileID != "" && l[0].Bytes > 0 })
	open := r.List()[0].FileID
	done := c.got()
	gone := filepath.Join(root, done[0].Rel)
	os.Remove(gone)
	os.Remove(gone + ".idx")
	// A finished file from elsewhere: another recorder's root.
	other := t.TempDir()
	h2 := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h2.Close()
	c2 := &collector{}
	r2 := newTestRecorder(t, h2, other, c2)
	if _, err := r2.Start(media.Path{App: "live", Stream: "other"}, 0); err != nil {
		t.Fatal(err)
	}
	pub2, _ := h2.Publish(media.Path{App: "live", Stream: "other"}, hub.Origin{Kind: "test"}, tracks)
	publish(t, pub2, tracks, 0, 30, 25)
	pub2.Close()
	testkit.Eventually(t, 20*time.Second, "the other file", func() bool { return len(c2.got()) == 1 })
	foreign := c2.got()[0]
	os.MkdirAll(filepath.Dir(filepath.Join(root, foreign.Rel)), 0o750)
	for _, ext := range []string{"", ".idx"} {
		b, _ := os.ReadFile(filepath.Join(other, foreign.Rel) + ext)
		os.WriteFile(filepath.Join(root, foreign.Rel)+ext, b, 0o640)
	}

	res, err := r.Scan()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, f := range res.Files {
		listed[f.FileID] = true
	}
	if len(res.Files) != 3 || !listed[done[1].FileID] || !listed[done[2].FileID] || !listed[foreign.FileID] || listed[open] ||
		res.Forgotten != 1 || res.Repaired != 0 || res.Unreadable != 0 {
		t.Fatalf("scan %+v (open %s)", res, open)
	}
	if _, _, err := r.Lookup(done[0].FileID); err == nil {
		t.Fatal("a removed file is still found")
	}
	if _, _, err := r.Lookup(foreign.FileID); err != nil {
		t.Fatalf("the file put on the root: %v", err)
	}
	publish(t, pub, tracks, 100, 30, 25) // the open file still finishes
	testkit.Eventually(t, 20*time.Second, "the open file reported", func() bool {
		for _, f := range c.got() {
			if f.FileID == open {
				return f.Frames > 0 && f.Reason == ReasonDuration
			}
		}
		return false
	})
}
