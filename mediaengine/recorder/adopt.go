package recorder

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Outputs written by another writer (a meeting composite made by ffmpeg)
// live beside the cut/merge outputs and are served the same way, by id:
// OutputDir is where their temporary files are made (the same filesystem,
// so adopting is a rename) and AdoptOutput gives one its id. Their
// sidecar has no parts (the bytes are served whole or by Range, never by
// time span).

// OutputDir is the directory of outputs, made when missing.
func (r *Recorder) OutputDir() (string, error) {
	dir := filepath.Join(r.root, CutMergeDir)
	return dir, os.MkdirAll(dir, 0o750)
}

// AdoptOutput makes the finished file tmp (in OutputDir) the output id,
// replacing an earlier one, and answers its size.
func (r *Recorder) AdoptOutput(id, tmp string, start time.Time, dur time.Duration, reason string) (int64, error) {
	if !nameRE.MatchString(id) {
		return 0, fmt.Errorf("%w: %q", ErrBadName, id)
	}
	st, err := os.Stat(tmp)
	if err != nil {
		return 0, err
	}
	rel := filepath.Join(CutMergeDir, id+".mp4")
	abs := filepath.Join(r.root, rel)
	start = start.UTC()
	var idx bytes.Buffer
	for _, l := range []indexLine{{T: lineHead, V: indexVersion, FileID: id, StartTime: &start},
		{T: lineEnd, Size: st.Size(), DurationMs: dur.Milliseconds(), Reason: reason}, {T: lineReported}} {
		if err := appendLine(&idx, l); err != nil {
			return 0, err
		}
	}
	if err := writeFileSync(abs+".idx", idx.Bytes()); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, abs); err != nil {
		return 0, err
	}
	r.addFile(id, rel)
	return st.Size(), nil
}
