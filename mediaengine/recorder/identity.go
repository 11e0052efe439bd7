package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/shared/engineapi"
)

// IdentityFile is the disk identity marker in a recording root. Only
// validation (ProbeRoot with bind: POST /api/v2/recording/disk/validate-root)
// writes it, on a directory without one; it names the disk identity and
// the filesystem it was written on. A root whose marker the recorder read
// (at start, or when it validated the root) is bound to both from then on:
// a root whose marker is absent or another, or whose filesystem is not the
// bound one, is a swapped disk (Mismatch): no new file starts there and
// retention deletes nothing on it, until the bound disk is back. A root
// never validated is Unbound: it records, but a swap cannot be told.
const IdentityFile = ".svc-disk-identity"

// diskIdentity is the marker's content.
type diskIdentity struct {
	IdentityID   string    `json:"identityId"`
	FilesystemID string    `json:"filesystemId"`
	CreatedAt    time.Time `json:"createdAt"`
}

// binding is what a root is bound to; the zero binding is an unbound root.
type binding struct {
	IdentityID, FilesystemID string
}

func (b binding) bound() bool { return b.IdentityID != "" }

// loadBinding binds a root to the marker it holds; a root without one
// stays unbound (the recorder never writes a marker by itself).
func loadBinding(root string) (binding, error) {
	d, err := readIdentity(root)
	if errors.Is(err, fs.ErrNotExist) {
		return binding{}, nil
	}
	if err != nil {
		return binding{}, err
	}
	return d.binding(), nil
}

func (d diskIdentity) binding() binding {
	return binding{IdentityID: d.IdentityID, FilesystemID: d.FilesystemID}
}

// writeIdentity writes a new marker in root, naming the filesystem the
// root lies on now.
func writeIdentity(root string) (diskIdentity, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return diskIdentity{}, err
	}
	fsID, _, _, err := statVolume(root)
	if err != nil {
		return diskIdentity{}, fmt.Errorf("recorder: reading the filesystem: %w", err)
	}
	d := diskIdentity{IdentityID: u.String(), FilesystemID: fsID, CreatedAt: time.Now().UTC()}
	b, err := json.Marshal(d)
	if err != nil {
		return diskIdentity{}, err
	}
	tmp := filepath.Join(root, IdentityFile+".tmp")
	if err := writeFileSync(tmp, b); err != nil {
		return diskIdentity{}, fmt.Errorf("recorder: writing the disk identity: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(root, IdentityFile)); err != nil {
		return diskIdentity{}, fmt.Errorf("recorder: writing the disk identity: %w", err)
	}
	return d, syncDir(root)
}

func readIdentity(root string) (diskIdentity, error) {
	b, err := os.ReadFile(filepath.Join(root, IdentityFile))
	if err != nil {
		return diskIdentity{}, err
	}
	var d diskIdentity
	if err := json.Unmarshal(b, &d); err != nil {
		return diskIdentity{}, fmt.Errorf("recorder: the disk identity marker is malformed: %w", err)
	}
	if d.IdentityID == "" {
		return diskIdentity{}, errors.New("recorder: the disk identity marker names no identity")
	}
	return d, nil
}

// sameFilesystem compares two filesystem ids (statVolume's "fsid-dev").
// The statfs fsid is what survives a reboot (ext4 and xfs derive it from
// the filesystem's UUID, while the device number may change with the
// order disks appear in), so it decides when both have one; the device
// number decides on filesystems whose fsid is zero.
func sameFilesystem(a, b string) bool {
	if a == b {
		return true
	}
	fa, da, _ := strings.Cut(a, "-")
	fb, db, _ := strings.Cut(b, "-")
	const zero = "0000000000000000"
	if fa != zero && fb != zero {
		return fa == fb
	}
	return fa == fb && da == db
}

// usableIdentity says whether a root in this identity state takes new
// files: Verified, or Unbound (never validated, so a swap cannot be told).
func usableIdentity(state string) bool {
	return state == engineapi.IdentityVerified || state == engineapi.IdentityUnbound
}

// checkIdentity says whether the primary root can take new files (see
// checkRoot).
func (r *Recorder) checkIdentity() (state, found string) {
	return checkRoot(r.root, *r.bound.Load())
}

// checkRoot says whether a root bound to b can take new files: Verified,
// Unbound (never validated), or Missing (the root is gone), Mismatch
// (another disk: its marker is absent or another, or it lies on another
// filesystem than the one bound) or ReadOnly (a file cannot be created
// there). found is the marker the root holds now.
func checkRoot(root string, b binding) (state, found string) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return engineapi.VolumeMissing, ""
	}
	d, err := readIdentity(root)
	found = d.IdentityID
	if b.bound() {
		if err != nil || found != b.IdentityID {
			return engineapi.VolumeMismatch, found
		}
		if fsID, _, _, err := statVolume(root); err == nil && b.FilesystemID != "" && !sameFilesystem(fsID, b.FilesystemID) {
			return engineapi.VolumeMismatch, found
		}
	}
	f, err := os.CreateTemp(root, ".svc-write-probe-*")
	if err != nil {
		return engineapi.VolumeReadOnly, found
	}
	f.Close()
	os.Remove(f.Name())
	if !b.bound() {
		return engineapi.IdentityUnbound, found
	}
	return engineapi.IdentityVerified, found
}
