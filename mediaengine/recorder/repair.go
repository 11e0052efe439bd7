package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Repair walks the recording root once, before recording starts (and
// then the fallback root, when one is set): a file whose sidecar has no
// end line was open when the engine died, and is truncated to its last
// whole fragment, re-indexed from its fragments and reported; a finished
// file not yet reported is reported again. It answers how many files it
// repaired and queued for reporting.
func (r *Recorder) Repair() (repaired, queued int, err error) {
	repaired, queued, err = r.repairRoot(r.root, false)
	if fb := r.fallback.Load(); fb != nil {
		fr, fq, ferr := r.repairRoot(fb.root, true)
		repaired, queued, err = repaired+fr, queued+fq, errors.Join(err, ferr)
	}
	r.mu.Lock()
	r.started = true
	r.mu.Unlock()
	return repaired, queued, err
}

// repairRoot is Repair of one root. On a fallback root, a file whose id
// the primary holds is the leftover of a recovery interrupted after the
// primary copy was whole: it is removed.
func (r *Recorder) repairRoot(root string, fallback bool) (repaired, queued int, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		if d.IsDir() || !strings.HasSuffix(p, ".mp4.idx") {
			return nil
		}
		rel, _ := filepath.Rel(root, strings.TrimSuffix(p, ".idx"))
		x, err := readIndex(p)
		if err != nil {
			r.log.Warn("sidecar index unreadable; file left alone", zap.String("file", rel), zap.Error(err))
			return nil
		}
		if fallback {
			r.mu.Lock()
			_, onPrimary := r.files[x.FileID()]
			r.mu.Unlock()
			if onPrimary {
				r.indexes.drop(x.FileID())
				os.Remove(filepath.Join(root, rel))
				os.Remove(p)
				r.log.Info("removed the fallback copy of a recovered file", zap.String("file", rel))
				return nil
			}
		}
		if x.Finished() {
			r.addFileAtRoot(x.FileID(), root, rel, fallback)
		}
		if x.Reported {
			return nil
		}
		var f FileInfo
		if x.Finished() {
			f = x.fileInfo(rel)
		} else {
			if f, err = repairFile(root, rel, x); err != nil {
				r.log.Warn("open recording file not repaired", zap.String("file", rel), zap.Error(err))
				return nil
			}
			repaired++
			r.indexes.drop(f.FileID)
			r.addFileAtRoot(f.FileID, root, rel, fallback)
			r.log.Info("open recording file repaired", zap.String("file", rel), zap.Int64("size", f.Size),
				zap.Duration("duration", f.Duration), zap.Uint64("frames", f.Frames))
		}
		if fallback {
			f.Fallback, f.root = true, root
		}
		queued++
		r.reporter.add(f)
		return nil
	})
	return repaired, queued, err
}

// addFileAtRoot makes a finished file under root findable by its id, on
// the primary or a fallback root.
func (r *Recorder) addFileAtRoot(id, root, rel string, fallback bool) {
	if !fallback {
		r.addFile(id, rel)
		return
	}
	r.mu.Lock()
	r.fbFiles[id] = fileLoc{root: root, rel: rel}
	delete(r.writing, id)
	r.mu.Unlock()
}

func (x *Index) fileInfo(rel string) FileInfo {
	f := FileInfo{FileID: x.head.FileID, Path: media.Path{Vhost: x.head.Vhost, App: x.head.App, Stream: x.head.Stream}, Rel: rel,
		StartTime: *x.head.StartTime}
	for _, t := range x.head.Tracks {
		f.Codecs = append(f.Codecs, t.Codec)
	}
	if x.end != nil {
		f.Size, f.Frames, f.Reason = x.end.Size, uint64(x.end.Frames), x.end.Reason
		f.Duration = time.Duration(x.end.DurationMs) * time.Millisecond
	}
	return f
}

// repairFile truncates an open file to its last whole fragment and
// replaces its sidecar with one rebuilt from the fragments.
func repairFile(root, rel string, x *Index) (FileInfo, error) {
	abs := filepath.Join(root, rel)
	file, err := os.OpenFile(abs, os.O_RDWR, 0)
	if err != nil {
		return FileInfo{}, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return FileInfo{}, err
	}
	tracks := map[uint32]indexTrack{}
	for _, t := range x.head.Tracks {
		tracks[t.ID] = t
	}
	if space := x.head.SidxSpace; space > 0 && st.Size() >= x.head.InitSize+space {
		// The engine may have died while it wrote the index there: make
		// the space a plain free box again so that the boxes chain.
		if _, err := file.WriteAt(freeBox(space), x.head.InitSize); err != nil {
			return FileInfo{}, err
		}
	}
	frags, end, err := scanFragments(file, st.Size(), tracks)
	if err != nil {
		return FileInfo{}, err
	}
	if len(frags) == 0 {
		return FileInfo{}, fmt.Errorf("%w: %s", ErrNoFragment, rel)
	}
	if end < st.Size() {
		if err := file.Truncate(end); err != nil {
			return FileInfo{}, err
		}
	}
	if x.head.SidxSpace > 0 {
		var idx sidxIndex
		for _, fr := range frags {
			idx.add(sidxPart{off: fr.off, size: fr.size, key: fr.key, bases: fr.spans})
		}
		if err := idx.write(file, x.head.Tracks, x.head.InitSize, x.head.SidxSpace); err != nil {
			return FileInfo{}, err
		}
	}
	if err := file.Sync(); err != nil {
		return FileInfo{}, err
	}
	base := time.Duration(x.head.BaseDTS)
	var b strings.Builder
	appendLine(&b, x.head)
	var frames int64
	last := base
	for _, fr := range frags {
		appendLine(&b, indexLine{T: linePart, Off: fr.off, Size: fr.size, At: (fr.start - base).Milliseconds(),
			Dur: max(fr.end-fr.start, 0).Milliseconds(), Key: fr.key, Frames: fr.frames})
		frames += fr.frames
		last = max(last, fr.end)
	}
	dur := last - base
	appendLine(&b, indexLine{T: lineEnd, Size: end, Frames: frames, DurationMs: dur.Milliseconds(), Reason: ReasonRepaired})
	tmp := abs + ".idx.tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o640); err != nil {
		return FileInfo{}, err
	}
	if err := os.Rename(tmp, abs+".idx"); err != nil {
		return FileInfo{}, err
	}
	f := x.fileInfo(rel)
	f.Size, f.Frames, f.Duration, f.Reason = end, uint64(frames), dur, ReasonRepaired
	return f, nil
}

// fragment is one whole moof+mdat found by scanFragments, its times in
// the stream's timeline.
type fragment struct {
	off, size  int64
	start, end time.Duration
	key        bool
	frames     int64
	// spans are its tracks' decode times (timescale units), for the
	// segment index.
	spans []trackSpan
}

type trackSpan struct {
	id        uint32
	base, end uint64
}

// maxMoof bounds a moof scanFragments reads; ours hold a second of
// samples at 16 bytes each.
const maxMoof = 4 << 20

// scanFragments walks the top-level boxes of a fragmented MP4 and returns
// its whole fragments (a moof followed by its mdat) and where the last
// one ends. A torn box at the end is where a crash cut the file.
func scanFragments(rd io.ReaderAt, size int64, tracks map[uint32]indexTrack) ([]fragment, int64, error) {
	var frags []fragment
	var end int64
	var moof *fragment
	hdr := make([]byte, 16)
	for off := int64(0); size-off >= 8; {
		if _, err := rd.ReadAt(hdr[:8], off); err != nil {
			return nil, 0, err
		}
		boxSize := int64(binary.BigEndian.Uint32(hdr))
		typ := string(hdr[4:8])
		hlen := int64(8)
		if boxSize == 1 {
			if size-off < 16 {
				break
			}
			if _, err := rd.ReadAt(hdr[8:16], off+8); err != nil {
				return nil, 0, err
			}
			boxSize, hlen = int64(binary.BigEndian.Uint64(hdr[8:])), 16
		}
		if boxSize < hlen || off+boxSize > size {
			break // torn, or written with size 0 and never finished
		}
		switch typ {
		case "ftyp", "moov":
			end = off + boxSize
		case "moof":
			if boxSize > maxMoof {
				return frags, end, fmt.Errorf("%w: moof of %d bytes", fmp4.ErrBox, boxSize)
			}
			b := make([]byte, boxSize)
			if _, err := rd.ReadAt(b, off); err != nil {
				return nil, 0, err
			}
			fr, err := parseMoof(b, tracks)
			if err != nil {
				return frags, end, err
			}
			fr.off = off
			moof = &fr
		case "mdat":
			if moof != nil {
				moof.size = off + boxSize - moof.off
				frags = append(frags, *moof)
				moof = nil
				end = off + boxSize
			}
		}
		off += boxSize
	}
	return frags, end, nil
}

// parseMoof reads a fragment's times, frame count and whether its video
// starts with a sync sample.
func parseMoof(b []byte, tracks map[uint32]indexTrack) (fragment, error) {
	boxes, err := fmp4.ReadBoxes(b)
	if err != nil {
		return fragment{}, err
	}
	if len(boxes) != 1 || boxes[0].Type != "moof" {
		return fragment{}, fmt.Errorf("%w: not a moof", fmp4.ErrBox)
	}
	fr := fragment{key: true}
	first := true
	hasVideo := false
	for _, traf := range boxes[0].Children {
		if traf.Type != "traf" {
			continue
		}
		var id uint32
		var base uint64
		var count, total int64
		sync := true
		for _, c := range traf.Children {
			switch {
			case c.Type == "tfhd" && len(c.Data) >= 8:
				id = binary.BigEndian.Uint32(c.Data[4:])
			case c.Type == "tfdt" && len(c.Data) >= 8 && c.Data[0] == 1 && len(c.Data) >= 12:
				base = binary.BigEndian.Uint64(c.Data[4:])
			case c.Type == "tfdt" && len(c.Data) >= 8:
				base = uint64(binary.BigEndian.Uint32(c.Data[4:]))
			case c.Type == "trun":
				if count, total, sync, err = parseTrun(c.Data); err != nil {
					return fragment{}, err
				}
			}
		}
		t, ok := tracks[id]
		if !ok || t.Timescale == 0 {
			return fragment{}, fmt.Errorf("%w: traf of unknown track %d", fmp4.ErrBox, id)
		}
		fr.spans = append(fr.spans, trackSpan{id: id, base: base, end: base + uint64(total)})
		start := ticks(base, t.Timescale)
		stop := ticks(base+uint64(total), t.Timescale)
		if first || start < fr.start {
			fr.start = start
		}
		if first || stop > fr.end {
			fr.end = stop
		}
		first = false
		fr.frames += count
		if media.Codec(t.Codec).Kind() == media.KindVideo {
			hasVideo = true
			fr.key = sync
		}
	}
	if first {
		return fragment{}, fmt.Errorf("%w: moof without traf", fmp4.ErrBox)
	}
	if !hasVideo {
		fr.key = true
	}
	return fr, nil
}

// ticks converts a decode time in timescale units to the stream's
// timeline (the inverse of fmp4.ToTimescale).
func ticks(v uint64, scale uint32) time.Duration {
	s, r := v/uint64(scale), v%uint64(scale)
	return time.Duration(s)*time.Second + time.Duration(r*uint64(time.Second)/uint64(scale)) - fmp4.TimeOrigin
}

// trun flags (ISO/IEC 14496-12 8.8.8).
const (
	trunDataOffset   = 0x000001
	trunFirstFlags   = 0x000004
	trunDuration     = 0x000100
	trunSize         = 0x000200
	trunFlags        = 0x000400
	trunCTS          = 0x000800
	sampleNonSyncBit = 0x00010000
)

// parseTrun answers a track run's sample count, total duration and
// whether its first sample is a sync sample.
func parseTrun(d []byte) (count, total int64, sync bool, err error) {
	if len(d) < 8 {
		return 0, 0, false, fmt.Errorf("%w: trun of %d bytes", fmp4.ErrBox, len(d))
	}
	flags := binary.BigEndian.Uint32(d) & 0xffffff
	n := int64(binary.BigEndian.Uint32(d[4:]))
	p := 8
	if flags&trunDataOffset != 0 {
		p += 4
	}
	sync = true
	if flags&trunFirstFlags != 0 {
		if len(d) < p+4 {
			return 0, 0, false, errShortTrun
		}
		sync = binary.BigEndian.Uint32(d[p:])&sampleNonSyncBit == 0
		p += 4
	}
	per := 0
	for _, f := range []uint32{trunDuration, trunSize, trunFlags, trunCTS} {
		if flags&f != 0 {
			per += 4
		}
	}
	if n < 0 || int64(len(d)-p) < n*int64(per) {
		return 0, 0, false, errShortTrun
	}
	if per == 0 {
		// No per-sample fields: nothing to add up, and a count of two
		// billion in a damaged file must not cost two billion turns.
		return n, 0, sync, nil
	}
	for i := int64(0); i < n; i++ {
		q := p
		if flags&trunDuration != 0 {
			total += int64(binary.BigEndian.Uint32(d[q:]))
			q += 4
		}
		if flags&trunSize != 0 {
			q += 4
		}
		if i == 0 && flags&trunFlags != 0 && flags&trunFirstFlags == 0 {
			sync = binary.BigEndian.Uint32(d[q:])&sampleNonSyncBit == 0
		}
		p += per
	}
	return n, total, sync, nil
}

var errShortTrun = fmt.Errorf("%w: trun shorter than its samples", fmp4.ErrBox)
