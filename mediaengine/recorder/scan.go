package recorder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.uber.org/zap"
)

// ScanResult is what a scan of the recording root found.
type ScanResult struct {
	// Files are the finished recordings on disk (cut/merge outputs, which
	// belong to their tasks, are not listed).
	Files []FileInfo
	// Repaired counts files left open by a crash that the scan repaired;
	// Unreadable those whose sidecar could not be read (left alone);
	// Forgotten the files the recorder knew that are no longer on disk.
	Repaired, Unreadable, Forgotten int
}

// Scan walks the recording roots again (the primary, then the fallback
// root and any earlier fallback root that still holds files the recorder
// knows) and makes the recorder's file maps what the disks hold: every
// finished file is listed once (and findable by id), those on a fallback
// root marked Fallback; a file some crash left open and nobody writes is
// repaired; a file that went from the disk is forgotten. A file on both
// the primary and a fallback root (a recovery cut short after the primary
// copy was whole) is the primary's. The control plane reconciles its
// index with the result (POST /api/v2/recording/files/scan).
func (r *Recorder) Scan() (ScanResult, error) {
	var res ScanResult
	found, err := r.scanRoot(r.root, false, &res)
	if err != nil {
		return res, err
	}
	fbFound := map[string]fileLoc{}
	for _, root := range r.fallbackRoots() {
		got, err := r.scanRoot(root, true, &res)
		if err != nil {
			return res, err
		}
		for id, rel := range got {
			if _, onPrimary := found[id]; !onPrimary {
				fbFound[id] = fileLoc{root: root, rel: rel}
			}
		}
	}
	kept := res.Files[:0]
	for _, f := range res.Files {
		if l, ok := fbFound[f.FileID]; f.Fallback && (!ok || l.root != f.root) {
			continue // the primary's copy, or another fallback root's, is listed
		}
		kept = append(kept, f)
	}
	res.Files = kept
	r.mu.Lock()
	for id, rel := range r.files {
		if _, ok := found[id]; !ok && !strings.HasPrefix(filepath.ToSlash(rel), CutMergeDir+"/") {
			delete(r.files, id)
			r.indexes.drop(id)
			res.Forgotten++
		}
	}
	for id := range r.fbFiles {
		if _, ok := fbFound[id]; !ok {
			if _, moved := found[id]; !moved {
				res.Forgotten++
			}
			delete(r.fbFiles, id)
			r.indexes.drop(id)
		}
	}
	for id, rel := range found {
		r.files[id] = rel
	}
	for id, l := range fbFound {
		r.fbFiles[id] = l
	}
	r.mu.Unlock()
	return res, nil
}

// fallbackRoots are the fallback roots a scan walks: the configured one
// and the earlier ones the recorder still knows files on.
func (r *Recorder) fallbackRoots() []string {
	var roots []string
	seen := map[string]bool{}
	if fb := r.fallback.Load(); fb != nil {
		roots, seen[fb.root] = append(roots, fb.root), true
	}
	r.mu.Lock()
	for _, l := range r.fbFiles {
		if !seen[l.root] {
			roots, seen[l.root] = append(roots, l.root), true
		}
	}
	r.mu.Unlock()
	sort.Strings(roots[min(1, len(roots)):])
	return roots
}

// scanRoot walks one root for Scan, adding what it finds to res, and
// answers the finished files by id. A root that is gone holds nothing.
func (r *Recorder) scanRoot(root string, fallback bool, res *ScanResult) (map[string]string, error) {
	found := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			if p == root && errors.Is(werr, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return werr
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == CutMergeDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".mp4.idx") {
			return nil
		}
		rel = strings.TrimSuffix(rel, ".idx")
		x, err := readIndex(p)
		if err != nil {
			res.Unreadable++
			r.log.Warn("scan: sidecar index unreadable; file left alone", zap.String("file", rel), zap.Error(err))
			return nil
		}
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			res.Unreadable++
			return nil
		}
		var f FileInfo
		switch {
		case x.Finished():
			f = x.fileInfo(rel)
		case r.isWriting(x.FileID()):
			return nil
		default:
			// Finished meanwhile (its writer released it after the read)?
			if again, err := readIndex(p); err == nil && again.Finished() {
				f = again.fileInfo(rel)
				break
			}
			if f, err = repairFile(root, rel, x); err != nil {
				res.Unreadable++
				r.log.Warn("scan: open recording file not repaired", zap.String("file", rel), zap.Error(err))
				return nil
			}
			res.Repaired++
			r.indexes.drop(f.FileID)
		}
		if fallback {
			f.Fallback, f.root = true, root
		}
		found[f.FileID] = rel
		res.Files = append(res.Files, f)
		return nil
	})
	return found, err
}

func (r *Recorder) isWriting(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writing[id]
}
