package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/shared/engineapi"
)

// IdentityFile is the disk identity marker in a recording root. The
// recorder binds the root to the marker it finds when it starts (writing
// one on a root without it), and from then on a root whose marker is
// absent or another is a swapped disk: no new file starts there and
// retention deletes nothing on it, until the bound disk is back.
const IdentityFile = ".svc-disk-identity"

// diskIdentity is the marker's content.
type diskIdentity struct {
	IdentityID   string    `json:"identityId"`
	FilesystemID string    `json:"filesystemId"`
	CreatedAt    time.Time `json:"createdAt"`
}

// bindIdentity reads the root's marker, writing one when there is none,
// and answers the identity the recorder binds the root to.
func bindIdentity(root string) (string, error) {
	if id, err := readIdentity(root); err == nil {
		return id, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	fsID, _, _, _ := statVolume(root)
	b, err := json.Marshal(diskIdentity{IdentityID: u.String(), FilesystemID: fsID, CreatedAt: time.Now().UTC()})
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(root, IdentityFile+".tmp")
	if err := writeFileSync(tmp, b); err != nil {
		return "", fmt.Errorf("recorder: writing the disk identity: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(root, IdentityFile)); err != nil {
		return "", fmt.Errorf("recorder: writing the disk identity: %w", err)
	}
	return u.String(), nil
}

func readIdentity(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, IdentityFile))
	if err != nil {
		return "", err
	}
	var d diskIdentity
	if err := json.Unmarshal(b, &d); err != nil {
		return "", fmt.Errorf("recorder: the disk identity marker is malformed: %w", err)
	}
	if d.IdentityID == "" {
		return "", errors.New("recorder: the disk identity marker names no identity")
	}
	return d.IdentityID, nil
}

// checkIdentity says whether the root can take new files: Verified, or
// Missing (the root is gone), Mismatch (another disk: its marker is absent
// or another, found) or ReadOnly (a file cannot be created there).
func (r *Recorder) checkIdentity() (state, found string) {
	return checkRoot(r.root, r.identity)
}

// checkRoot is checkIdentity for any root bound to identity (the primary
// or the fallback).
func checkRoot(root, identity string) (state, found string) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return engineapi.VolumeMissing, ""
	}
	found, err = readIdentity(root)
	if err != nil || found != identity {
		return engineapi.VolumeMismatch, found
	}
	f, err := os.CreateTemp(root, ".svc-write-probe-*")
	if err != nil {
		return engineapi.VolumeReadOnly, found
	}
	f.Close()
	os.Remove(f.Name())
	return engineapi.IdentityVerified, found
}
