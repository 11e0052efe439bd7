package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/shared/engineapi"
)

// filesystemTypes names the statfs magic numbers an operator is likely to
// meet under a recording root.
var filesystemTypes = map[int64]string{
	0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs", 0x794c7630: "overlay",
	0x6969: "nfs", 0xFF534D42: "cifs", 0x2FC12FC1: "zfs", 0x4d44: "vfat", 0x5346544e: "ntfs", 0x65735546: "fuse",
}

// ProbeRoot checks a candidate recording root: an absolute, clean path to
// a directory the engine can write (tested by creating and removing a
// probe file, the only thing a plain probe writes), holding no marker or
// one written on the filesystem it lies on now. With bind (validation) it
// also binds the disk identity on first success: it writes the marker
// when the directory has none (an existing marker is never replaced),
// and when the directory is the engine's primary or fallback root and
// that root is unbound, binds the root to it at once. A root already
// bound is only checked: validating it while it holds another disk is
// refused (Mismatch), never re-bound.
func (r *Recorder) ProbeRoot(path string, bind bool) engineapi.RootProbe {
	p := engineapi.RootProbe{Path: path, CheckedAt: time.Now().UTC()}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.Contains(path, "\x00") {
		p.Problem = "the path must be absolute and clean (no .., no trailing slash)"
		return p
	}
	p.Current = filepath.Clean(r.root) == path
	st, err := os.Stat(path)
	if err != nil {
		p.Problem = "the directory does not exist"
		if !errors.Is(err, fs.ErrNotExist) {
			p.Problem = "the directory cannot be read: " + err.Error()
		}
		return p
	}
	p.Exists, p.Directory = true, st.IsDir()
	if !p.Directory {
		p.Problem = "the path is not a directory"
		return p
	}
	var sfs unix.Statfs_t
	if unix.Statfs(path, &sfs) == nil {
		p.FilesystemType = filesystemTypes[int64(sfs.Type)]
	}
	p.FilesystemID, p.TotalBytes, p.FreeBytes, _ = statVolume(path)
	if f, err := os.CreateTemp(path, ".svc-write-probe-*"); err == nil {
		f.Close()
		os.Remove(f.Name())
		p.Writable = true
	}
	// Binding is one change at a time: two validations of one root must
	// not write two markers.
	r.bindMu.Lock()
	defer r.bindMu.Unlock()
	d, err := readIdentity(path)
	switch {
	case err == nil:
		p.IdentityID = d.IdentityID
	case !errors.Is(err, fs.ErrNotExist):
		p.Problem = err.Error()
		return p
	}
	if p.IdentityID != "" && d.FilesystemID != "" && p.FilesystemID != "" && !sameFilesystem(p.FilesystemID, d.FilesystemID) {
		p.Problem = fmt.Sprintf("%s: the identity marker was written on filesystem %s, the directory now lies on %s (another disk holding a copy of the marker)",
			engineapi.VolumeMismatch, d.FilesystemID, p.FilesystemID)
		return p
	}
	cur, isRoot := r.rootBinding(path)
	if isRoot && cur.bound() && p.IdentityID != cur.IdentityID {
		found := p.IdentityID
		if found == "" {
			found = "none"
		}
		p.Problem = fmt.Sprintf("%s: the root is bound to disk identity %s and holds %s (a swapped disk); it stays paused until the bound disk is back",
			engineapi.VolumeMismatch, cur.IdentityID, found)
		return p
	}
	if !p.Writable {
		p.Problem = "the engine cannot create files in the directory"
		return p
	}
	if bind && p.IdentityID == "" {
		d, err = writeIdentity(path)
		if err != nil {
			p.Problem = err.Error()
			return p
		}
		p.IdentityID, p.Bound = d.IdentityID, true
	}
	if bind && isRoot && !cur.bound() {
		r.setRootBinding(path, d.binding())
		p.Bound = true
		r.log.Info("recording root bound to its disk identity", zap.String("root", path), zap.String("identity", d.IdentityID),
			zap.String("filesystem", d.FilesystemID))
	}
	p.Valid = true
	return p
}

// rootBinding is the binding of the primary or fallback root at path;
// isRoot is false for any other path. bindMu is held.
func (r *Recorder) rootBinding(path string) (b binding, isRoot bool) {
	if filepath.Clean(r.root) == path {
		return *r.bound.Load(), true
	}
	if fb := r.fallback.Load(); fb != nil && fb.root == path {
		return fb.bound, true
	}
	return binding{}, false
}

// setRootBinding binds the primary or fallback root at path; bindMu is
// held.
func (r *Recorder) setRootBinding(path string, b binding) {
	if filepath.Clean(r.root) == path {
		r.bound.Store(&b)
		return
	}
	if fb := r.fallback.Load(); fb != nil && fb.root == path {
		r.fallback.Store(&fallbackRoot{root: fb.root, bound: b})
	}
}
