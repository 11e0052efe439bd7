package recorder

import (
	"io/fs"
	"os"
	"path/filepath"
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

// Scan walks the recording root again and makes the recorder's file map
// what the disk holds: every finished file is listed (and findable by
// id), a file some crash left open and nobody writes is repaired, and a
// file that went from the disk is forgotten. The control plane reconciles
// its index with the result (POST /api/v2/recording/files/scan).
func (r *Recorder) Scan() (ScanResult, error) {
	var res ScanResult
	found := map[string]string{}
	err := filepath.WalkDir(r.root, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		rel, _ := filepath.Rel(r.root, p)
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
		if _, err := os.Stat(filepath.Join(r.root, rel)); err != nil {
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
			if f, err = repairFile(r.root, rel, x); err != nil {
				res.Unreadable++
				r.log.Warn("scan: open recording file not repaired", zap.String("file", rel), zap.Error(err))
				return nil
			}
			res.Repaired++
			r.indexes.drop(f.FileID)
		}
		found[f.FileID] = rel
		res.Files = append(res.Files, f)
		return nil
	})
	if err != nil {
		return res, err
	}
	r.mu.Lock()
	for id, rel := range r.files {
		if _, ok := found[id]; !ok && !strings.HasPrefix(filepath.ToSlash(rel), CutMergeDir+"/") {
			delete(r.files, id)
			r.indexes.drop(id)
			res.Forgotten++
		}
	}
	for id, rel := range found {
		r.files[id] = rel
	}
	r.mu.Unlock()
	return res, nil
}

func (r *Recorder) isWriting(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writing[id]
}
