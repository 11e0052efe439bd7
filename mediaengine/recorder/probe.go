package recorder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

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
// probe file, the only thing a plain probe writes). With bind it also
// writes the identity marker when the directory has none, so the disk is
// recognised from then on; an existing marker is never replaced.
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
	id, err := readIdentity(path)
	switch {
	case err == nil:
		p.IdentityID = id
	case !errors.Is(err, fs.ErrNotExist):
		p.Problem = err.Error()
		return p
	}
	if !p.Writable {
		p.Problem = "the engine cannot create files in the directory"
		return p
	}
	if bind && p.IdentityID == "" {
		id, err := bindIdentity(path)
		if err != nil {
			p.Problem = err.Error()
			return p
		}
		p.IdentityID, p.Bound = id, true
	}
	p.Valid = true
	return p
}
