package recorder

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// TestFallbackRootAndRecovery: with the primary root Full, new files go
// to the fallback root (reported so, found by id there) instead of being
// refused; once space is freed new files go to the primary again.
// Recovery previews the fallback files, moves them (same id, same path
// under the primary, the fallback copies gone, every frame still there)
// and a second run finds them on the primary. A restarted recorder finds
// every file once, and removes a fallback copy the primary already holds
// (a recovery interrupted before its removal).
func TestFallbackRootAndRecovery(t *testing.T) {
	root := smallVolume(t, "8m")
	filler := filepath.Join(root, "filler")
	if err := os.WriteFile(filler, make([]byte, 7*mib), 0o600); err != nil {
		t.Fatal(err)
	}
	fbRoot := filepath.Join(t.TempDir(), "fallback")
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	c := &collector{}
	cfg := Config{Root: root, SegmentDuration: 2 * time.Second, SegmentMaxBytes: 1 << 30, PartDuration: 300 * time.Millisecond,
		Report: c.report, Watermarks: Watermarks{LowSpaceBytes: 3 * mib, FullBytes: 2 * mib}, FallbackRoot: fbRoot}
	r, err := New(h, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Repair(); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{root, fbRoot} {
		if p := r.ProbeRoot(root, true); !p.Valid || !p.Bound {
			t.Fatalf("validating %s: %+v", root, p)
		}
	}
	closed := false
	defer func() {
		if !closed {
			r.Close()
		}
	}()
	// A fallback root nested with the primary is refused when set, and
	// ignored (the primary records alone) when a recorder starts with it.
	nested, err := New(h, Config{Root: root, FallbackRoot: filepath.Join(root, "inside")}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("a nested fallback root kept the recorder from starting: %v", err)
	}
	if fb := nested.FallbackRoot(); fb != "" {
		t.Fatalf("a fallback root inside the primary was taken: %q", fb)
	}
	if err := nested.SetFallback(filepath.Dir(root)); !errors.Is(err, ErrBadFallback) {
		t.Fatalf("a fallback root around the primary: %v", err)
	}
	nested.Close()
	path := media.Path{App: "live", Stream: "fb"}
	if _, err := r.Start(path, 0); err != nil {
		t.Fatal(err)
	}
	track := mediatest.Tracks()[0]
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, []*media.Track{track})
	if err != nil {
		t.Fatal(err)
	}
	publishBig(t, pub, track, 0, 150, 10_000) // 6 s in 2 s files, all on the fallback
	testkit.Eventually(t, 20*time.Second, "files on the fallback", func() bool { return len(c.got()) >= 2 })
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	publishBig(t, pub, track, 150, 150, 10_000)
	pub.Close()
	testkit.Eventually(t, 20*time.Second, "the last file", func() bool { l := r.List(); return len(l) == 1 && l[0].State == "waiting" })
	info, err := r.Stop(path)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "every report", func() bool { return len(c.got()) == info.Files })
	v, err := r.Volume()
	if err != nil {
		t.Fatal(err)
	}
	files := c.got()
	var onFallback []string
	var frames uint64
	for i, f := range files {
		frames += f.Frames
		where := root
		if f.Fallback {
			where = fbRoot
			onFallback = append(onFallback, f.FileID)
		}
		abs, _, err := r.Lookup(f.FileID)
		if err != nil || abs != filepath.Join(where, f.Rel) {
			t.Fatalf("file %d (fallback %v) found at %q, %v", i, f.Fallback, abs, err)
		}
	}
	if v.Refused != 0 || len(onFallback) < 2 || files[0].Fallback != true || files[len(files)-1].Fallback || frames != 300 ||
		v.FallbackFiles != len(onFallback) || v.FallbackRoot != fbRoot || v.FallbackState != engineapi.IdentityVerified {
		t.Fatalf("%d of %d files on the fallback, %d frames, volume %+v", len(onFallback), len(files), frames, v)
	}

	// A scan walks both roots: every file listed once, those on the
	// fallback marked so, nothing forgotten, every file still found.
	scan, err := r.Scan()
	if err != nil {
		t.Fatal(err)
	}
	scanned := map[string]bool{}
	for _, f := range scan.Files {
		if scanned[f.FileID] || f.Fallback != slices.Contains(onFallback, f.FileID) {
			t.Fatalf("scan listed %s (fallback %v) twice or on the wrong root", f.FileID, f.Fallback)
		}
		scanned[f.FileID] = true
	}
	if len(scan.Files) != len(files) || scan.Forgotten != 0 || scan.Unreadable != 0 || len(r.FallbackFiles()) != len(onFallback) {
		t.Fatalf("scan of both roots: %+v, %d files, %d on the fallback", scan, len(files), len(onFallback))
	}
	preview, primary := r.RecoverFallback(nil, true)
	if primary != engineapi.IdentityVerified || len(preview) != len(onFallback) {
		t.Fatalf("preview: %s %+v", primary, preview)
	}
	for _, it := range preview {
		if it.Result != RecoverWouldMove || it.FileSize <= 0 {
			t.Fatalf("preview item: %+v", it)
		}
	}
	// Looked up (so cached) at their fallback paths: after the recovery
	// Lookup must answer the primary's.
	for _, f := range files {
		if _, _, err := r.Lookup(f.FileID); err != nil {
			t.Fatal(err)
		}
	}
	moved, _ := r.RecoverFallback(nil, false)
	for _, it := range moved {
		if it.Result != RecoverMoved {
			t.Fatalf("recovery item: %+v", it)
		}
	}
	var recovered uint64
	for _, f := range files {
		abs, x, err := r.Lookup(f.FileID)
		if err != nil || abs != filepath.Join(root, f.Rel) || !x.Finished() {
			t.Fatalf("after recovery %s is at %q, %v", f.FileID, abs, err)
		}
		if _, err := os.Stat(filepath.Join(fbRoot, f.Rel)); !os.IsNotExist(err) {
			t.Fatalf("the fallback copy of %s is still there: %v", f.Rel, err)
		}
		recovered += uint64(x.end.Frames)
	}
	if recovered != 300 {
		t.Fatalf("the recovered files hold %d frames of 300", recovered)
	}
	again, _ := r.RecoverFallback(onFallback[:1], false)
	if len(again) != 1 || again[0].Result != RecoverOnPrimary {
		t.Fatalf("a second run: %+v", again)
	}
	if nf, _ := r.RecoverFallback([]string{"no-such-file"}, true); nf[0].Result != RecoverNotFound {
		t.Fatalf("an unknown file: %+v", nf)
	}
	r.Close()
	closed = true

	// A recovery cut short after the primary copy was whole: both roots
	// hold the file; the restarted recorder keeps the primary's.
	left := files[0]
	for _, ext := range []string{"", ".idx"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(fbRoot, left.Rel)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := copyVerified(filepath.Join(root, left.Rel)+ext, filepath.Join(fbRoot, left.Rel)+ext); err != nil {
			t.Fatal(err)
		}
	}
	r2, err := New(h, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, _, err := r2.Repair(); err != nil {
		t.Fatal(err)
	}
	if abs, _, err := r2.Lookup(left.FileID); err != nil || abs != filepath.Join(root, left.Rel) {
		t.Fatalf("after a restart the file is at %q, %v", abs, err)
	}
	if _, err := os.Stat(filepath.Join(fbRoot, left.Rel)); !os.IsNotExist(err) {
		t.Fatalf("the leftover fallback copy stayed: %v", err)
	}
	if n := len(r2.FallbackFiles()); n != 0 {
		t.Fatalf("%d files still on the fallback", n)
	}
}
