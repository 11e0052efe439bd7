package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/shared/engineapi"
)

// Watermarks are the free-space limits of the recording root's volume.
type Watermarks struct {
	// LowSpaceBytes: below this much free space the volume is LowSpace
	// (zero: never).
	LowSpaceBytes int64
	// FullBytes: below this the volume is Full and no new file starts
	// (zero: never).
	FullBytes int64
	// Retention deletes the oldest finished recordings while LowSpace.
	Retention bool
	// MaxAge deletes finished recordings older than this (zero: never).
	MaxAge time.Duration
}

// SetWatermarks changes the watermarks of a running recorder (a reloaded
// configuration); the next file or volume read uses them, and the sweep
// runs again at once.
func (r *Recorder) SetWatermarks(wm Watermarks) {
	r.wm.Store(&wm)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// statVolume reads the filesystem the root lies on. Free is what an
// unprivileged writer may use (f_bavail), which is what the recorder can
// actually fill.
func statVolume(root string) (id string, total, free int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return "", 0, 0, err
	}
	var s unix.Stat_t
	if err := unix.Stat(root, &s); err != nil {
		return "", 0, 0, err
	}
	// f_fsid alone is zero on some filesystems; the device number tells
	// mounts apart there.
	id = fmt.Sprintf("%08x%08x-%x", uint32(st.Fsid.Val[0]), uint32(st.Fsid.Val[1]), s.Dev)
	bs := int64(st.Bsize)
	return id, int64(st.Blocks) * bs, int64(st.Bavail) * bs, nil
}

func (w Watermarks) state(free int64) string {
	switch {
	case w.FullBytes > 0 && free < w.FullBytes:
		return engineapi.VolumeFull
	case w.LowSpaceBytes > 0 && free < w.LowSpaceBytes:
		return engineapi.VolumeLowSpace
	}
	return engineapi.VolumeNormal
}

// Volume reads the root's volume now; with retention configured a low
// volume is pruned first, so the state is the one after pruning.
func (r *Recorder) Volume() (engineapi.RecordingVolume, error) {
	r.guardMu.Lock()
	defer r.guardMu.Unlock()
	st, err := r.checkVolume()
	if err != nil {
		return engineapi.RecordingVolume{}, err
	}
	r.mu.Lock()
	st.PrunedFileIDs = append([]string(nil), r.pruned...)
	st.Refused = r.refused
	st.FallbackFiles = len(r.fbFiles)
	r.mu.Unlock()
	if fb := r.fallback.Load(); fb != nil {
		st.FallbackRoot = fb.root
		st.FallbackState, _ = checkRoot(fb.root, fb.bound)
		if why := fb.usable(*r.wm.Load()); why != "" {
			st.FallbackState = why
		}
	}
	return st, nil
}

// checkVolume reads the volume and prunes it when low; guardMu is held.
// A root that is missing, read-only or another disk is reported so (its
// state says which) and never pruned; an Unbound root is used and pruned
// like a Verified one (it is the root the engine was configured with).
func (r *Recorder) checkVolume() (engineapi.RecordingVolume, error) {
	wm := *r.wm.Load()
	b := *r.bound.Load()
	v := engineapi.RecordingVolume{Root: r.root, IdentityID: b.IdentityID, BoundFilesystemID: b.FilesystemID, LowSpaceBytes: wm.LowSpaceBytes,
		FullBytes: wm.FullBytes, Retention: wm.Retention, MaxAgeSeconds: int64(wm.MaxAge / time.Second), CheckedAt: time.Now().UTC()}
	ident, found := checkRoot(r.root, b)
	v.IdentityState = ident
	if found != b.IdentityID {
		v.FoundIdentityID = found
	}
	if ident == engineapi.VolumeMissing {
		v.State = ident
		return v, nil
	}
	id, total, free, err := statVolume(r.root)
	if err != nil {
		return engineapi.RecordingVolume{}, fmt.Errorf("recorder: volume: %w", err)
	}
	if usableIdentity(ident) && wm.Retention && wm.state(free) != engineapi.VolumeNormal {
		r.prune(func() (int64, error) {
			_, _, f, err := statVolume(r.root)
			return f, err
		}, &free)
	}
	v.FilesystemID, v.TotalBytes, v.FreeBytes, v.State = id, total, free, wm.state(free)
	if !usableIdentity(ident) {
		v.State = ident
	}
	return v, nil
}

// admit is asked before a new file is opened: it prunes a low volume when
// retention allows and answers the root the file goes to. A paused
// primary (Full, or its disk swapped, missing or read-only) sends the file
// to the fallback root when one is configured and usable; without one the
// file is refused (ErrVolumeFull, ErrRootUnusable) and the instance waits
// and tries again at a later keyframe, so recording resumes by itself once
// the primary is back.
func (r *Recorder) admit() (string, bool, error) {
	wm := *r.wm.Load()
	r.guardMu.Lock()
	var v engineapi.RecordingVolume
	var err error
	if wm.LowSpaceBytes == 0 && wm.FullBytes == 0 {
		v.IdentityState, _ = r.checkIdentity()
	} else {
		v, err = r.checkVolume()
	}
	r.guardMu.Unlock()
	if err != nil {
		return r.root, false, nil // a volume that cannot be read is not known to be full; the write itself will tell
	}
	var refusal error
	switch {
	case !usableIdentity(v.IdentityState):
		refusal = fmt.Errorf("%w: %s is %s", ErrRootUnusable, r.root, v.IdentityState)
	case v.State == engineapi.VolumeFull:
		refusal = fmt.Errorf("%w: %d bytes free, full below %d", ErrVolumeFull, v.FreeBytes, wm.FullBytes)
	}
	if refusal == nil {
		if r.onFallback.Swap(false) {
			r.log.Info("the primary recording root is usable again; new files go there")
		}
		return r.root, false, nil
	}
	if fb := r.fallback.Load(); fb != nil {
		why := fb.usable(wm)
		if why == "" {
			if !r.onFallback.Swap(true) {
				r.log.Warn("the primary recording root is paused; new files go to the fallback root", zap.String("fallback", fb.root), zap.Error(refusal))
			}
			return fb.root, true, nil
		}
		refusal = fmt.Errorf("%w (the fallback root %s is %s too)", refusal, fb.root, why)
	}
	r.mu.Lock()
	r.refused++
	r.mu.Unlock()
	return "", false, refusal
}

// prune deletes the oldest finished recordings (by modification time,
// which is when each was finished) until free space is at the low
// watermark again or none is left. Cut/merge outputs are left alone:
// they belong to their tasks. The files being written are not in r.files,
// so they are never pruned; nor are files whose on_record_mp4 is still
// pending, which the control plane would otherwise index after their
// bytes were gone (with the control plane unreachable the volume can
// then reach Full, and recording pauses rather than losing the index).
func (r *Recorder) prune(freeNow func() (int64, error), free *int64) {
	for _, c := range r.retentionCandidates() {
		if *free >= r.wm.Load().LowSpaceBytes {
			return
		}
		if err := r.Delete(c.id); err != nil && !errors.Is(err, ErrFileNotFound) && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("retention could not delete a recording", zap.String("file", c.rel), zap.Error(err))
			continue
		}
		r.notePruned(c.id)
		r.log.Info("retention deleted the oldest recording", zap.String("file", c.rel), zap.String("fileId", c.id))
		f, err := freeNow()
		if err != nil {
			return
		}
		*free = f
	}
}
