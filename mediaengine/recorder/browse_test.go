package recorder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/shared/engineapi"
)

// browseRoot makes a recording root holding a directory, a file, a
// symlink inside the root and one to /etc (an escape).
func browseRoot(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rec")
	for _, d := range []string{"live/cam", "live/other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "live/cam/a.mp4"), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", filepath.Join(root, "live/cam/inner")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("../", 3), filepath.Join(root, "live/up")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestBrowseConfined: listings and new directories stay under the root:
// traversal strings, absolute paths and symlinks that lead out (to /etc,
// or up through ..) are refused as outside_root; a symlink within the root
// is followed; a new directory is made and checked writable, an odd name
// or a missing parent refused.
func TestBrowseConfined(t *testing.T) {
	root := browseRoot(t)
	h := hub.New(hub.Config{}, zaptest.NewLogger(t))
	defer h.Close()
	r, err := New(h, Config{Root: root, SegmentDuration: 2e9, SegmentMaxBytes: 1 << 30, PartDuration: 3e8}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res := r.Browse(engineapi.BrowseRequest{Path: ""})
	if res.Problem != "" || len(res.Entries) != 2 || res.Entries[0].Name != "live" || res.Entries[0].Type != engineapi.BrowseDirectory ||
		res.Entries[1].Name != "etc" || res.Entries[1].Type != engineapi.BrowseSymlink {
		t.Fatalf("the root: %+v", res)
	}
	if res := r.Browse(engineapi.BrowseRequest{Path: "live/cam/inner"}); res.Problem != "" {
		t.Fatalf("a symlink within the root: %+v", res)
	}
	for _, bad := range []string{"..", "../", "live/../..", "live/../../etc", "/etc", "/", "etc", "etc/ssl", "live/up", "live/up/tmp",
		"live/cam/" + strings.Repeat("../", 3) + "etc", "./../x"} {
		if res := r.Browse(engineapi.BrowseRequest{Path: bad}); res.Problem != engineapi.BrowseOutsideRoot || len(res.Entries) != 0 {
			t.Fatalf("%q: %+v", bad, res)
		}
		if res := r.Browse(engineapi.BrowseRequest{Path: bad + "/new", Create: true}); res.Problem != engineapi.BrowseOutsideRoot || res.Created {
			t.Fatalf("create under %q: %+v", bad, res)
		}
	}
	if _, err := os.Stat("/etc/new"); err == nil {
		t.Fatal("a directory was made in /etc")
	}
	for path, want := range map[string]string{"nope": engineapi.BrowseNotFound, "live/cam/a.mp4": engineapi.BrowseNotDirectory,
		"a\x00b": engineapi.BrowseBadPath, `live\..\..`: engineapi.BrowseBadPath} {
		if res := r.Browse(engineapi.BrowseRequest{Path: path}); res.Problem != want {
			t.Fatalf("%q: %+v, want %s", path, res, want)
		}
	}
	if res := r.Browse(engineapi.BrowseRequest{Root: "fallback", Path: ""}); res.Problem != engineapi.BrowseBadPath {
		t.Fatalf("a fallback root that is not configured: %+v", res)
	}
	if res := r.Browse(engineapi.BrowseRequest{Path: "live/new-dir", Create: true}); res.Problem != "" || !res.Created || !res.Writable {
		t.Fatalf("create: %+v", res)
	}
	if st, err := os.Stat(filepath.Join(root, "live/new-dir")); err != nil || !st.IsDir() {
		t.Fatalf("the new directory: %v", err)
	}
	if res := r.Browse(engineapi.BrowseRequest{Path: "live/new-dir", Create: true}); res.Problem != "" || res.Created || !res.Writable {
		t.Fatalf("create again: %+v", res)
	}
	for path, want := range map[string]string{"live/.hidden": engineapi.BrowseBadPath, "missing/parent": engineapi.BrowseNotFound} {
		if res := r.Browse(engineapi.BrowseRequest{Path: path, Create: true}); res.Problem != want || res.Created {
			t.Fatalf("create %q: %+v, want %s", path, res, want)
		}
	}
}

// FuzzConfine: whatever the path, Confine either refuses it or answers a
// path whose existing part resolves under the root (the root holds a
// symlink to /etc and one up through ..).
func FuzzConfine(f *testing.F) {
	for _, s := range []string{"", "live", "live/cam", "..", "../..", "/etc", "etc/passwd", "live/up/x", "live/cam/inner", "a/./b",
		"live//cam", "live/cam/../cam", "\x00", `..\x`, strings.Repeat("a/", 40)} {
		f.Add(s)
	}
	root := browseRoot(f)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		p, err := Confine(root, rel)
		if err != nil {
			return
		}
		for q := p; ; q = filepath.Dir(q) {
			if _, err := os.Lstat(q); err != nil {
				continue
			}
			resolved, err := filepath.EvalSymlinks(q)
			if err != nil {
				t.Fatalf("%q confined to %q, which does not resolve: %v", rel, p, err)
			}
			if !within(realRoot, resolved) {
				t.Fatalf("%q confined to %q, which resolves to %q outside %q", rel, p, resolved, realRoot)
			}
			return
		}
	})
}
