package recorder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// TestLookupCachesSidecars: a second Lookup of a file answers the index
// the first parsed; a changed sidecar is parsed again; a deleted file is
// not found although its index was cached.
func TestLookupCachesSidecars(t *testing.T) {
	h := hub.New(hub.Config{ReaderQueueFrames: 4096}, zaptest.NewLogger(t))
	defer h.Close()
	c := &collector{}
	r := newTestRecorder(t, h, t.TempDir(), c)
	path := media.Path{App: "live", Stream: "cam"}
	if _, err := r.Start(path, 0); err != nil {
		t.Fatal(err)
	}
	tracks := mediatest.Tracks()
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, pub, tracks, 0, 100, 25)
	pub.Close()
	testkit.Eventually(t, 10*time.Second, "the last file", func() bool { l := r.List(); return len(l) == 1 && l[0].State == "waiting" })
	info, err := r.Stop(path)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "every report", func() bool { return len(c.got()) == info.Files })
	f := c.got()[0]
	// The reporter appends the reported line after the report: wait for
	// the sidecar to stop changing.
	testkit.Eventually(t, 10*time.Second, "the reported line", func() bool {
		_, x, err := r.Lookup(f.FileID)
		return err == nil && x.Reported
	})
	abs, x1, err := r.Lookup(f.FileID)
	if err != nil {
		t.Fatal(err)
	}
	if _, x2, err := r.Lookup(f.FileID); err != nil || x2 != x1 {
		t.Fatalf("a second lookup parsed the sidecar again (%v)", err)
	}

	// A sidecar that changed (another line, another size) is read again.
	idx, err := os.OpenFile(abs+".idx", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendLine(idx, indexLine{T: lineReported}); err != nil {
		t.Fatal(err)
	}
	idx.Close()
	if _, x3, err := r.Lookup(f.FileID); err != nil || x3 == x1 || len(x3.Parts) != len(x1.Parts) {
		t.Fatalf("a changed sidecar was answered from the cache (%v)", err)
	}

	if err := r.Delete(f.FileID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Lookup(f.FileID); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("a deleted file was found: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Root(), f.Rel)); !os.IsNotExist(err) {
		t.Fatalf("the deleted file is on disk: %v", err)
	}
}

// TestIndexCacheBounded: the cache keeps at most its limit, dropping the
// least recently used.
func TestIndexCacheBounded(t *testing.T) {
	dir := t.TempDir()
	c := newIndexCache(2)
	st := map[string]os.FileInfo{}
	for _, id := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, id)
		if err := os.WriteFile(p, []byte(id), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st[id] = s
	}
	c.put("a", "a", st["a"], &Index{})
	c.put("b", "b", st["b"], &Index{})
	if _, ok := c.get("a", "a", st["a"]); !ok { // a is now the most recent
		t.Fatal("a missed")
	}
	c.put("c", "c", st["c"], &Index{})
	if _, ok := c.get("b", "b", st["b"]); ok || c.len() != 2 {
		t.Fatalf("b, the least recently used, stayed (%d cached)", c.len())
	}
	if _, ok := c.get("a", "elsewhere", st["a"]); ok {
		t.Fatal("a moved sidecar hit the cache")
	}
	c.drop("c")
	if c.len() != 0 {
		t.Fatalf("%d cached after drops", c.len())
	}
}

// BenchmarkLookup compares a seek's sidecar cost with the cache (a stat)
// and without it (reading and parsing the sidecar of a 10-minute file
// with 1 s parts).
func BenchmarkLookup(b *testing.B) {
	h := hub.New(hub.Config{}, zaptest.NewLogger(b))
	defer h.Close()
	r, err := New(h, Config{Root: b.TempDir()}, zaptest.NewLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	const id = "0190f2c4-7b7e-7a1c-9d2e-3f4a5b6c7d8e"
	rel := "live/cam/file.mp4"
	abs := filepath.Join(r.Root(), rel)
	os.MkdirAll(filepath.Dir(abs), 0o750)
	os.WriteFile(abs, nil, 0o640)
	var sb strings.Builder
	start := time.Now().UTC()
	appendLine(&sb, indexLine{T: lineHead, V: indexVersion, FileID: id, App: "live", Stream: "cam", StartTime: &start, InitSize: 900,
		Tracks: []indexTrack{{ID: 1, Codec: "H264", Timescale: 90000}, {ID: 2, Codec: "AAC", Timescale: 48000}}})
	for i := range 600 {
		appendLine(&sb, indexLine{T: linePart, Off: 1000 + int64(i)*250000, Size: 250000, At: int64(i) * 1000, Dur: 1000, Key: i%2 == 0, Frames: 72})
	}
	appendLine(&sb, indexLine{T: lineEnd, Size: 150001000, Frames: 43200, DurationMs: 600000, Reason: ReasonDuration})
	os.WriteFile(abs+".idx", []byte(sb.String()), 0o640)
	r.addFile(id, rel)
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := r.Lookup(id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parsed", func(b *testing.B) {
		for b.Loop() {
			if _, err := readIndex(abs + ".idx"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
