package recorder

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/shared/engineapi"
)

// fallbackRoot is the root new files go to while the primary is paused.
// It is bound to a disk identity of its own, like the primary.
type fallbackRoot struct {
	root  string
	bound binding
}

// usable says why the fallback cannot take a new file ("" when it can):
// its identity state, or Full by the same watermark as the primary.
func (fb *fallbackRoot) usable(wm Watermarks) string {
	if st, _ := checkRoot(fb.root, fb.bound); !usableIdentity(st) {
		return st
	}
	if wm.FullBytes > 0 {
		if _, _, free, err := statVolume(fb.root); err == nil && free < wm.FullBytes {
			return engineapi.VolumeFull
		}
	}
	return ""
}

// fileLoc is where a file on a fallback root lies: the root it was
// written to (a later configuration may name another) and the path under
// it.
type fileLoc struct {
	root, rel string
}

// SetFallback makes root the fallback root (empty: none). A root that is
// the primary or nested with it is refused (ErrBadFallback: a scan, the
// retention and recovery of one root would walk the other's files). A
// new root is bound to the marker it holds (unbound without one, until
// validated) and, when the recorder is already running, walked so that
// the files it holds are found by id (and reported when they never were).
func (r *Recorder) SetFallback(root string) error {
	if root == "" {
		r.fallback.Store(nil)
		return nil
	}
	if cur := r.fallback.Load(); cur != nil && cur.root == root {
		return nil
	}
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return fmt.Errorf("%w: %q is not an absolute, clean path", ErrBadFallback, root)
	}
	if within(r.root, root) || within(root, r.root) {
		return fmt.Errorf("%w: %q and the primary root %q overlap", ErrBadFallback, root, r.root)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return fmt.Errorf("recorder: fallback root: %w", err)
	}
	b, err := loadBinding(root)
	if err != nil {
		return err
	}
	r.bindMu.Lock()
	r.fallback.Store(&fallbackRoot{root: root, bound: b})
	r.bindMu.Unlock()
	r.mu.Lock()
	started := r.started
	r.mu.Unlock()
	if started {
		if _, _, err := r.repairRoot(root, true); err != nil {
			r.log.Warn("fallback root not fully scanned", zap.String("root", root), zap.Error(err))
		}
	}
	r.log.Info("fallback recording root set", zap.String("root", root), zap.String("identity", b.IdentityID))
	return nil
}

// FallbackRoot is the fallback root ("" when none is set).
func (r *Recorder) FallbackRoot() string {
	if fb := r.fallback.Load(); fb != nil {
		return fb.root
	}
	return ""
}

// within says whether p is dir or lies under it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// locate finds a finished file's root and path under it; mu is held.
func (r *Recorder) locate(id string) (root, rel string, fallback, ok bool) {
	if rel, ok := r.files[id]; ok {
		return r.root, rel, false, true
	}
	if l, ok := r.fbFiles[id]; ok {
		return l.root, l.rel, true, true
	}
	return "", "", false, false
}

// FallbackFile is a finished file on a fallback root, awaiting recovery
// to the primary.
type FallbackFile struct {
	FileID string
	Root   string
	Rel    string
	Size   int64
}

// FallbackFiles lists the files on fallback roots, by path.
func (r *Recorder) FallbackFiles() []FallbackFile {
	r.mu.Lock()
	out := make([]FallbackFile, 0, len(r.fbFiles))
	for id, l := range r.fbFiles {
		out = append(out, FallbackFile{FileID: id, Root: l.root, Rel: l.rel})
	}
	r.mu.Unlock()
	for i := range out {
		if fi, err := os.Stat(filepath.Join(out[i].Root, out[i].Rel)); err == nil {
			out[i].Size = fi.Size()
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out
}

// Recovery results of one file (engineapi.FallbackRecoveryItem.Result).
const (
	RecoverWouldMove = engineapi.RecoveryWouldMove
	RecoverMoved     = engineapi.RecoveryMoved
	RecoverOnPrimary = engineapi.RecoveryOnPrimary
	RecoverNotFound  = engineapi.RecoveryNotFound
	RecoverBlocked   = engineapi.RecoveryBlocked
	RecoverFailed    = engineapi.RecoveryFailed
)

// RecoverFallback moves files from fallback roots back to the primary
// (ids, or every fallback file when empty); with dryRun it only says what
// it would do. A file is copied beside its final name, synced and its
// size checked, renamed into place (the MP4 before its sidecar, which is
// what a scan looks for), and only once the primary copy is whole and the
// file is found there by id is the fallback copy removed: interrupted at
// any point, the file is in one place or both, never neither (a restart
// removes a fallback copy whose id the primary already holds). It answers
// one item per file and the primary's identity state.
func (r *Recorder) RecoverFallback(ids []string, dryRun bool) ([]engineapi.FallbackRecoveryItem, string) {
	r.recoverMu.Lock()
	defer r.recoverMu.Unlock()
	if len(ids) == 0 {
		for _, f := range r.FallbackFiles() {
			ids = append(ids, f.FileID)
		}
	}
	wm := *r.wm.Load()
	primary, _ := r.checkIdentity()
	out := make([]engineapi.FallbackRecoveryItem, 0, len(ids))
	for _, id := range ids {
		it := engineapi.FallbackRecoveryItem{FileID: id}
		r.mu.Lock()
		root, rel, fallback, ok := r.locate(id)
		r.mu.Unlock()
		if ok {
			it.FilePath = filepath.ToSlash(rel)
			if fi, err := os.Stat(filepath.Join(root, rel)); err == nil {
				it.FileSize = fi.Size()
			}
		}
		switch {
		case !ok:
			it.Result = RecoverNotFound
		case !fallback:
			it.Result = RecoverOnPrimary
		case !usableIdentity(primary):
			it.Result, it.Detail = RecoverBlocked, "the primary root is "+primary
		default:
			if _, _, free, err := statVolume(r.root); err == nil && wm.FullBytes > 0 && free-it.FileSize < wm.FullBytes {
				it.Result, it.Detail = RecoverBlocked, fmt.Sprintf("the primary root would fall below its full watermark (%d bytes free)", free)
			} else if dryRun {
				it.Result = RecoverWouldMove
			} else if err := r.moveToPrimary(id, root, rel); err != nil {
				it.Result, it.Detail = RecoverFailed, err.Error()
				r.log.Warn("fallback recovery of a file failed; it stays on the fallback root", zap.String("fileId", id), zap.Error(err))
			} else {
				it.Result = RecoverMoved
				r.log.Info("recording file moved back to the primary root", zap.String("fileId", id), zap.String("file", rel))
			}
		}
		out = append(out, it)
	}
	return out, primary
}

// moveToPrimary copies one fallback file (MP4 and sidecar) to the same
// path under the primary root, switches its id there and removes the
// fallback copy.
func (r *Recorder) moveToPrimary(id, fbRoot, rel string) error {
	src, dst := filepath.Join(fbRoot, rel), filepath.Join(r.root, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	for _, ext := range []string{"", ".idx"} {
		if err := copyVerified(src+ext, dst+ext+".recovering"); err != nil {
			return err
		}
	}
	for _, ext := range []string{"", ".idx"} {
		if err := os.Rename(dst+ext+".recovering", dst+ext); err != nil {
			return err
		}
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	r.mu.Lock()
	r.files[id] = rel
	delete(r.fbFiles, id)
	r.mu.Unlock()
	r.indexes.drop(id)
	var errs []error
	for _, ext := range []string{"", ".idx"} {
		if err := os.Remove(src + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// The primary copy is whole and found; the leftover goes at the
		// next start.
		r.log.Warn("the fallback copy of a recovered file was not removed", zap.String("file", src), zap.Error(err))
	}
	return nil
}

// copyVerified copies src to dst, syncs dst and checks that it holds as
// many bytes as src.
func copyVerified(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != st.Size() {
		err = fmt.Errorf("recorder: copied %d of %d bytes of %s", n, st.Size(), src)
	}
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(dst); err == nil && fi.Size() != st.Size() {
			err = fmt.Errorf("recorder: %s holds %d bytes, %d expected", dst, fi.Size(), st.Size())
		}
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
