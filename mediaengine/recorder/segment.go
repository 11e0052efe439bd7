package recorder

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
)

// FileInfo describes a finished recording file: what on_record_mp4
// reports and the control plane indexes.
type FileInfo struct {
	FileID string
	Path   media.Path
	// Rel is the file's path under the recording root.
	Rel       string
	Size      int64
	StartTime time.Time
	Duration  time.Duration
	Frames    uint64
	Codecs    []string
	// Reason is why the file closed (engineapi.RecordMP4Hook.Reason).
	Reason string
	// Fallback says the file lies under the fallback root (written while
	// the primary root was paused) rather than the primary.
	Fallback bool
	// root is the root the file lies under (empty: the primary).
	root string
}

// Reasons a file closes.
const (
	ReasonDuration    = "duration"
	ReasonSize        = "size"
	ReasonTracks      = "tracks"
	ReasonStopped     = "stopped"
	ReasonStreamEnded = "stream-ended"
	ReasonRepaired    = "repaired"
)

// segment is one file being written: the MP4 and its sidecar.
type segment struct {
	root, rel string
	fallback  bool
	file, idx *os.File
	head      indexLine
	codecs    []string
	size      int64
	frames    uint64
	baseDTS   time.Duration
	endDTS    time.Duration
	seq       uint32
	// sidx is what the segment index written when the file finishes is
	// built from (sidx.go).
	sidx sidxIndex
	// buf and vec are reused for every fragment: buf holds its boxes and
	// small samples, vec the slices writev takes (the media bytes are not
	// copied; a part of a 2 Mbps stream is about 250 KB of them).
	buf []byte
	vec [][]byte
	vw  *vecWriter
}

// segmentPath is where a file of stream p starting at wall goes:
// <vhost>/<app>/<stream>/<YYYY-MM-DD>/<HH-MM-SS>-<id prefix>.mp4, in UTC
// so that a day's directory never holds an hour twice.
func segmentPath(p media.Path, wall time.Time, id string) string {
	u := wall.UTC()
	return filepath.Join(p.Vhost, p.App, p.Stream, u.Format("2006-01-02"), u.Format("15-04-05")+"-"+id[len(id)-8:]+".mp4")
}

// createSegment opens a new file for tracks whose first frame has stream
// time first at wall-clock time wall, and writes its initialisation
// segment, the space for its segment index (refs references) and its
// sidecar head. claim, when set, learns the file's id before the file
// exists (a scan must never take it for a crash's leftover).
func createSegment(root string, p media.Path, tracks []*media.Track, first time.Duration, wall time.Time, refs int, claim func(string)) (*segment, error) {
	init, err := fmp4.InitSegment(tracks)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	if claim != nil {
		claim(id.String())
	}
	s := &segment{root: root, rel: segmentPath(p, wall, id.String()), baseDTS: first, endDTS: first}
	abs := filepath.Join(root, s.rel)
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, err
	}
	if s.file, err = os.OpenFile(abs, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640); err != nil {
		return nil, err
	}
	if s.idx, err = os.OpenFile(abs+".idx", os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640); err != nil {
		s.file.Close()
		return nil, err
	}
	if s.vw, err = newVecWriter(s.file); err != nil {
		s.abandon()
		return nil, err
	}
	w := wall.UTC()
	s.head = indexLine{T: lineHead, V: indexVersion, FileID: id.String(), Vhost: p.Vhost, App: p.App, Stream: p.Stream,
		StartTime: &w, BaseDTS: int64(first), InitSize: int64(len(init)), SidxSpace: int64(len(tracks)) * sidxSpace(refs)}
	for _, t := range tracks {
		s.head.Tracks = append(s.head.Tracks, indexTrack{ID: fmp4.TrackID(t), Codec: string(t.Codec), Timescale: fmp4.Timescale(t)})
		s.codecs = append(s.codecs, string(t.Codec))
	}
	if err := appendLine(s.idx, s.head); err != nil {
		s.abandon()
		return nil, err
	}
	if _, err := s.file.Write(append(init, freeSpace(s.head.SidxSpace)...)); err != nil {
		s.abandon()
		return nil, err
	}
	s.size = int64(len(init)) + s.head.SidxSpace
	return s, nil
}

// abandon closes and removes a file that failed before holding media.
func (s *segment) abandon() {
	s.file.Close()
	s.idx.Close()
	abs := filepath.Join(s.root, s.rel)
	os.Remove(abs)
	os.Remove(abs + ".idx")
}

// writePart appends one fragment of runs, starting at stream time start
// and ending at end, and notes it in the sidecar after the bytes are in
// the file: a part the sidecar lists is always whole.
func (s *segment) writePart(runs []fmp4.Run, start, end time.Duration, key bool, frames int) error {
	s.seq++
	s.buf, s.vec = fmp4.AppendFragmentVec(s.buf[:0], s.vec[:0], s.seq, runs)
	var size int64
	for _, b := range s.vec {
		size += int64(len(b))
	}
	_, err := s.vw.write(s.vec)
	clear(s.vec) // it points into the part's frames, which it must not keep alive
	if err != nil {
		return fmt.Errorf("recorder: writing %s: %w", s.rel, err)
	}
	off := s.size
	s.size += size
	sp := sidxPart{off: off, size: size, key: key}
	for _, r := range runs {
		if len(r.Samples) == 0 {
			continue
		}
		id, end := fmp4.TrackID(r.Track), r.BaseTime
		for _, smp := range r.Samples {
			end += uint64(smp.Duration)
		}
		sp.bases = append(sp.bases, trackSpan{id: id, base: r.BaseTime, end: end})
	}
	s.sidx.add(sp)
	s.frames += uint64(frames)
	s.endDTS = max(s.endDTS, end)
	return appendLine(s.idx, indexLine{T: linePart, Off: off, Size: size, At: (start - s.baseDTS).Milliseconds(),
		Dur: max(end-start, 0).Milliseconds(), Key: key, Frames: int64(frames)})
}

// finish syncs and closes the file, writes the sidecar's end line and
// describes the file.
func (s *segment) finish(reason string) (FileInfo, error) {
	err := s.sidx.write(s.file, s.head.Tracks, s.head.InitSize, s.head.SidxSpace)
	if serr := s.file.Sync(); err == nil {
		err = serr
	}
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	info := s.info(reason)
	if err == nil {
		err = appendLine(s.idx, indexLine{T: lineEnd, Size: s.size, Frames: int64(s.frames), DurationMs: info.Duration.Milliseconds(), Reason: reason})
	}
	if serr := s.idx.Sync(); err == nil {
		err = serr
	}
	if cerr := s.idx.Close(); err == nil {
		err = cerr
	}
	return info, err
}

func (s *segment) info(reason string) FileInfo {
	return FileInfo{FileID: s.head.FileID, Path: media.Path{Vhost: s.head.Vhost, App: s.head.App, Stream: s.head.Stream}, Rel: s.rel,
		Size: s.size, StartTime: *s.head.StartTime, Duration: s.endDTS - s.baseDTS, Frames: s.frames, Codecs: s.codecs, Reason: reason, Fallback: s.fallback, root: s.root}
}
