package recorder

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/shared/engineapi"
)

// TestProbeRoot checks candidate roots: a fresh tmpfs is a valid, writable
// tmpfs without a marker, and a probe leaves it so; validation writes the
// marker once (again it finds the same one); the same filesystem mounted
// read-only, a missing path, a file and unclean paths are not valid; the
// recorder's own root is Current with its bound identity.
func TestProbeRoot(t *testing.T) {
	h := hub.New(hub.Config{}, zaptest.NewLogger(t))
	defer h.Close()
	base := t.TempDir()
	r := newTestRecorder(t, h, filepath.Join(base, "root"), &collector{})
	cand := filepath.Join(base, "cand")
	if err := os.Mkdir(cand, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", cand, "tmpfs", 0, "size=2m"); err != nil {
		t.Fatalf("mount a tmpfs (the test runs as root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(cand, unix.MNT_DETACH) })

	p := r.ProbeRoot(cand, false)
	if !p.Valid || !p.Exists || !p.Directory || !p.Writable || p.FilesystemType != "tmpfs" || p.TotalBytes != 2<<20 || p.FreeBytes <= 0 ||
		p.FilesystemID == "" || p.IdentityID != "" || p.Bound || p.Current || p.Problem != "" {
		t.Fatalf("probe of a fresh tmpfs: %+v", p)
	}
	if ents, _ := os.ReadDir(cand); len(ents) != 0 {
		t.Fatalf("a probe wrote %d entries", len(ents))
	}
	v := r.ProbeRoot(cand, true)
	d, err := readIdentity(cand)
	id := d.IdentityID
	if !v.Valid || !v.Bound || v.IdentityID == "" || err != nil || id != v.IdentityID || d.FilesystemID != v.FilesystemID {
		t.Fatalf("validation: %+v (marker %q %v)", v, id, err)
	}
	if again := r.ProbeRoot(cand, true); !again.Valid || again.Bound || again.IdentityID != id {
		t.Fatalf("validation again: %+v, want the marker %s kept", again, id)
	}
	if err := unix.Mount("", cand, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if ro := r.ProbeRoot(cand, true); ro.Valid || ro.Writable || ro.IdentityID != id || ro.Bound || ro.Problem == "" {
		t.Fatalf("a read-only candidate: %+v", ro)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unclean := filepath.Join(base, "sub") + string(filepath.Separator) + filepath.Join("..", "cand")
	for _, bad := range []string{filepath.Join(base, "missing"), file, "relative/dir", unclean, cand + "/"} {
		if p := r.ProbeRoot(bad, true); p.Valid || p.Bound || p.Problem == "" {
			t.Fatalf("%q: %+v", bad, p)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "missing")); err == nil {
		t.Fatal("validation created a missing directory")
	}
	// The recorder's own root starts unbound (nothing wrote a marker);
	// validating it binds the running recorder at once.
	rootDir := filepath.Join(base, "root")
	own := r.ProbeRoot(rootDir, false)
	if !own.Valid || !own.Current || own.IdentityID != "" || own.Bound {
		t.Fatalf("the recorder's root: %+v", own)
	}
	if v, _ := r.Volume(); v.IdentityState != engineapi.IdentityUnbound || v.IdentityID != "" {
		t.Fatalf("the unvalidated root: %+v", v)
	}
	bound := r.ProbeRoot(rootDir, true)
	if v, _ := r.Volume(); !bound.Valid || !bound.Bound || !bound.Current || v.IdentityID != bound.IdentityID ||
		v.IdentityState != engineapi.IdentityVerified || v.BoundFilesystemID != bound.FilesystemID {
		t.Fatalf("validating the recorder's root: %+v, volume %+v", bound, v)
	}
}
