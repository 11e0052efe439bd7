package recorder

import (
	"os"
	"path/filepath"
	"strings"
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

// TestDiskIdentity starts a recorder on a root nobody validated (Unbound:
// it records, no marker is written), validates the root (the marker is
// written and the running recorder bound to it and to the filesystem),
// records a live stream in 1 s files, and then: mounts another filesystem
// (a tmpfs) over the root, which is a swapped disk (Mismatch, no new file,
// retention idle, validation refused), also when the tmpfs holds a copy of
// the marker (the filesystem is not the bound one); makes the root
// read-only (a read-only bind mount of itself: the marker matches, writes
// fail: ReadOnly); and moves the root away (Missing). Each time recording
// pauses without an error and resumes by itself once the bound disk is
// back, and a recorder started again on the root keeps the identity.
func TestDiskIdentity(t *testing.T) {
	h := hub.New(hub.Config{ReaderQueueFrames: 1 << 14}, zaptest.NewLogger(t))
	defer h.Close()
	root := filepath.Join(t.TempDir(), "disk")
	c := &collector{}
	r := newVolumeRecorder(t, h, root, c, Watermarks{MaxAge: time.Hour})
	v, err := r.Volume()
	if _, merr := os.Stat(filepath.Join(root, IdentityFile)); err != nil || !os.IsNotExist(merr) || v.IdentityID != "" ||
		v.IdentityState != engineapi.IdentityUnbound || v.State != engineapi.VolumeNormal {
		t.Fatalf("a fresh root: %+v %v (marker: %v)", v, err, merr)
	}
	p := r.ProbeRoot(root, true)
	d, rerr := readIdentity(root)
	id := d.IdentityID
	v, err = r.Volume()
	if !p.Valid || !p.Bound || err != nil || rerr != nil || v.IdentityID != id || p.IdentityID != id || v.IdentityState != engineapi.IdentityVerified ||
		v.BoundFilesystemID != d.FilesystemID || v.FilesystemID != d.FilesystemID {
		t.Fatalf("validated: %+v, volume %+v %v (marker %+v %v)", p, v, err, d, rerr)
	}
	path := media.Path{App: "live", Stream: "disk"}
	if _, err := r.Start(path, time.Second); err != nil {
		t.Fatal(err)
	}
	track := mediatest.Tracks()[0]
	pub, err := h.Publish(path, hub.Origin{Kind: "test"}, []*media.Track{track})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	next := 0
	// feed publishes 2 s more of the stream.
	feed := func() {
		publishBig(t, pub, track, next, 50, 200)
		next += 50
	}
	testkit.Eventually(t, 20*time.Second, "a file on the bound disk", func() bool { feed(); return r.List()[0].Files > 0 })
	paused := func(want string, undo func()) {
		t.Helper()
		v, err := r.Volume()
		if err != nil || v.State != want || v.IdentityState != want || v.IdentityID != id {
			t.Fatalf("volume %+v %v, want %s", v, err, want)
		}
		refused := v.Refused
		testkit.Eventually(t, 20*time.Second, want+": a new file refused", func() bool {
			feed()
			v, _ := r.Volume()
			return v.Refused > refused
		})
		before := r.List()[0].Files
		undo()
		testkit.Eventually(t, 20*time.Second, "recording resumed", func() bool {
			feed()
			v, _ := r.Volume()
			return v.State == engineapi.VolumeNormal && r.List()[0].Files > before
		})
	}

	marker, err := os.ReadFile(filepath.Join(root, IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("mount a tmpfs (the test runs as root): %v", err)
	}
	if p := r.ProbeRoot(root, true); p.Valid || p.Bound || !strings.HasPrefix(p.Problem, engineapi.VolumeMismatch) {
		t.Fatalf("validating the swapped disk: %+v", p)
	}
	if _, err := os.Stat(filepath.Join(root, IdentityFile)); !os.IsNotExist(err) {
		t.Fatalf("validation wrote a marker on the swapped disk: %v", err)
	}
	paused(engineapi.VolumeMismatch, func() {
		// A copy of the marker does not make it the bound disk.
		if err := os.WriteFile(filepath.Join(root, IdentityFile), marker, 0o600); err != nil {
			t.Fatal(err)
		}
		if v, _ := r.Volume(); v.IdentityState != engineapi.VolumeMismatch || v.FoundIdentityID != "" {
			t.Fatalf("a copied marker on another filesystem: %+v", v)
		}
		unix.Unmount(root, unix.MNT_DETACH)
	})

	if err := unix.Mount(root, root, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	paused(engineapi.VolumeReadOnly, func() { unix.Unmount(root, unix.MNT_DETACH) })

	if err := os.Rename(root, root+".away"); err != nil {
		t.Fatal(err)
	}
	paused(engineapi.VolumeMissing, func() { os.Rename(root+".away", root) })

	if _, err := r.Stop(path); err != nil {
		t.Fatal(err)
	}
	r2 := newVolumeRecorder(t, h, root, c, Watermarks{})
	if v, _ := r2.Volume(); v.IdentityID != id || v.IdentityState != engineapi.IdentityVerified {
		t.Fatalf("after a restart: %+v", v)
	}
}
