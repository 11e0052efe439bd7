package recorder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/shared/engineapi"
)

// candidate is a finished recording retention may delete.
type candidate struct {
	id, rel string
	mod     time.Time
}

// retentionCandidates lists the files retention may delete, oldest first
// (by modification time, which is when each was finished). Cut/merge
// outputs are left alone: they belong to their tasks. The files being
// written are not in r.files, so they are never candidates; nor are
// files whose on_record_mp4 is still pending, which the control plane
// would otherwise index after their bytes were gone.
func (r *Recorder) retentionCandidates() []candidate {
	unreported := r.reporter.pendingIDs()
	r.mu.Lock()
	cands := make([]candidate, 0, len(r.files))
	for id, rel := range r.files {
		if unreported[id] || strings.HasPrefix(filepath.ToSlash(rel), CutMergeDir+"/") {
			continue
		}
		cands = append(cands, candidate{id: id, rel: rel})
	}
	r.mu.Unlock()
	for i := range cands {
		if fi, err := os.Stat(filepath.Join(r.root, cands[i].rel)); err == nil {
			cands[i].mod = fi.ModTime()
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if !cands[i].mod.Equal(cands[j].mod) {
			return cands[i].mod.Before(cands[j].mod)
		}
		return cands[i].rel < cands[j].rel
	})
	return cands
}

// notePruned remembers a file retention deleted, for the control plane.
func (r *Recorder) notePruned(id string) {
	r.mu.Lock()
	r.pruned = append(r.pruned, id)
	if n := len(r.pruned) - engineapi.MaxPrunedReported; n > 0 {
		r.pruned = append(r.pruned[:0], r.pruned[n:]...)
	}
	r.mu.Unlock()
}

// Sweep applies retention now: files older than MaxAge go, then the
// watermarks are checked (pruning a low volume when retention is on). It
// answers how many files the age rule deleted.
func (r *Recorder) Sweep(now time.Time) int {
	r.guardMu.Lock()
	defer r.guardMu.Unlock()
	wm := *r.wm.Load()
	n := 0
	if ident, _ := r.checkIdentity(); !usableIdentity(ident) {
		return 0 // not the bound disk (or none): nothing on it is ours to delete
	}
	if wm.MaxAge > 0 {
		cutoff := now.Add(-wm.MaxAge)
		for _, c := range r.retentionCandidates() {
			if c.mod.IsZero() || !c.mod.Before(cutoff) {
				break // the rest are younger (a file that cannot be read is left for the scan)
			}
			if err := r.Delete(c.id); err != nil && !errors.Is(err, ErrFileNotFound) && !errors.Is(err, fs.ErrNotExist) {
				r.log.Warn("retention could not delete an expired recording", zap.String("file", c.rel), zap.Error(err))
				continue
			}
			r.notePruned(c.id)
			n++
			r.log.Info("retention deleted an expired recording", zap.String("file", c.rel), zap.String("fileId", c.id),
				zap.Duration("maxAge", wm.MaxAge))
		}
	}
	if wm.LowSpaceBytes > 0 || wm.FullBytes > 0 {
		if _, err := r.checkVolume(); err != nil {
			r.log.Debug("retention could not read the volume", zap.Error(err))
		}
	}
	return n
}

// sweepInterval is how often the sweep runs: every minute, or every
// quarter of MaxAge when that is shorter (a file outlives its age by at
// most a quarter).
func sweepInterval(wm Watermarks) time.Duration {
	d := time.Minute
	if wm.MaxAge > 0 {
		d = min(d, max(wm.MaxAge/4, 250*time.Millisecond))
	}
	return d
}

// sweepLoop runs Sweep until the recorder closes; a configuration change
// (SetWatermarks) runs it at once.
func (r *Recorder) sweepLoop() {
	defer close(r.sweepDone)
	t := time.NewTimer(sweepInterval(*r.wm.Load()))
	defer t.Stop()
	for {
		select {
		case <-r.stopSweep:
			return
		case <-t.C:
		case <-r.wake:
			t.Stop()
		}
		r.Sweep(time.Now())
		t.Reset(sweepInterval(*r.wm.Load()))
	}
}
