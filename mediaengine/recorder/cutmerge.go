package recorder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Cut/merge joins spans of finished files into one fragmented MP4 without
// decoding anything: the output is the first file's initialisation
// segment and the chosen fragments (moof+mdat) copied as they are, so
// every frame is byte-identical to its source. A span starts at the last
// fragment beginning with a keyframe at or before its start (every
// keyframe starts a fragment) and ends with the last frame decoded before
// its end: the fragment holding that frame is written again with only the
// frames before it (trimFragment). Fragments keep their own timeline
// where files follow on (a file starts where the previous one ended);
// where they do not (a gap without recording, or a stream that began
// again), the decode times of what follows are moved to continue the
// output without a gap. Otherwise only the tfdt and mfhd fields of each
// moof are rewritten. Like a finished recording, the output carries an
// sidx per track after its init (sidx.go), so a player seeks in it over
// HTTP Range with one read of the index, and a sidecar index.

// CutMergeDir is the directory under the root that holds outputs, named
// by task id; they are findable and deletable by that id like files.
const CutMergeDir = "cutmerge"

// ErrCutMerge is a cut/merge the sources cannot make: files with
// different tracks, or spans holding no media.
var ErrCutMerge = errors.New("recorder: cannot cut and merge these spans")

// Span is the media of one finished file to take: from From to To after
// the file's first frame; To zero means to its end.
type Span struct {
	FileID   string
	From, To time.Duration
}

// CutMergeResult describes an output.
type CutMergeResult struct {
	Size int64
	// Duration is the media the output covers (the spans without the
	// gaps between them), Frames its frame count.
	Duration time.Duration
	Frames   uint64
	// Parts is the number of fragments copied, Gaps how many
	// discontinuities were closed.
	Parts, Gaps int
	// StartTime is the wall-clock time of the first frame copied.
	StartTime time.Time
}

// gapTolerance is how far a fragment may start from where the previous
// one ended before it counts as a gap (rounding of the stream clock).
const gapTolerance = 100 * time.Millisecond

// chosen is one fragment to copy; until, when set, keeps only its samples
// decoded before that time past the fragment's start (the end of a span).
type chosen struct {
	path  string
	part  Part
	until time.Duration
}

// CutMerge writes the output of task id from spans, in order; writing it
// again (a repeated command) replaces it.
func (r *Recorder) CutMerge(id string, spans []Span) (CutMergeResult, error) {
	var res CutMergeResult
	if !nameRE.MatchString(id) {
		return res, fmt.Errorf("%w: %q", ErrBadName, id)
	}
	var init []byte
	var head indexLine
	var parts []chosen
	for i, s := range spans {
		path, x, err := r.Lookup(s.FileID)
		if err != nil {
			return res, err
		}
		var d time.Duration // to the end of the file
		if s.To > 0 {
			if d = s.To - s.From; d <= 0 {
				continue
			}
		}
		if !x.Finished() {
			return res, fmt.Errorf("%w: %q", ErrFileNotFound, s.FileID)
		}
		from, to, ok := x.Span(s.From, d)
		if !ok || s.From >= x.Duration() {
			continue
		}
		b, err := readAt(path, 0, x.InitSize())
		if err != nil {
			return res, err
		}
		if init == nil {
			init, head = b, x.head
			res.StartTime = x.StartTime()
		} else if !bytes.Equal(b, init) {
			return res, fmt.Errorf("%w: span %d (file %s) has other tracks than the first (a codec or resolution change); cut the range in two",
				ErrCutMerge, i, s.FileID)
		}
		for _, p := range x.Parts {
			if p.Offset >= from && p.Offset < to {
				if len(parts) == 0 {
					res.StartTime = x.StartTime().Add(p.At)
				}
				c := chosen{path: path, part: p}
				if s.To > 0 && p.At+p.Duration > s.To {
					c.until = s.To - p.At
				}
				parts = append(parts, c)
			}
		}
	}
	if len(parts) == 0 {
		return res, fmt.Errorf("%w: the spans hold no media", ErrCutMerge)
	}
	scales := map[uint32]uint32{}
	tracks := map[uint32]indexTrack{}
	for _, t := range head.Tracks {
		scales[t.ID] = t.Timescale
		tracks[t.ID] = t
	}
	// The index's space holds a reference per keyframe part (trimming
	// only drops parts), one more for a first part without a keyframe.
	refs := 1
	for _, c := range parts {
		if c.part.Key {
			refs++
		}
	}
	space := int64(len(head.Tracks)) * sidxSpace(refs)
	rel := filepath.Join(CutMergeDir, id+".mp4")
	abs := filepath.Join(r.root, rel)
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return res, err
	}
	out, err := os.CreateTemp(filepath.Dir(abs), "."+id+"-*.tmp")
	if err != nil {
		return res, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	var idx bytes.Buffer
	start := res.StartTime.UTC()
	h := indexLine{T: lineHead, V: indexVersion, FileID: id, Vhost: head.Vhost, App: head.App, Stream: head.Stream, StartTime: &start,
		InitSize: int64(len(init)), SidxSpace: space, Tracks: head.Tracks}
	if err := appendLine(&idx, h); err != nil {
		return res, err
	}
	if _, err := out.Write(append(init, freeSpace(space)...)); err != nil {
		return res, err
	}
	size := int64(len(init)) + space
	var sidx sidxIndex
	video := uint32(0) // the track a gap is measured on: video, else the first
	for _, t := range head.Tracks {
		if video == 0 || media.Codec(t.Codec).Kind() == media.KindVideo {
			video = t.ID
			if media.Codec(t.Codec).Kind() == media.KindVideo {
				break
			}
		}
	}
	var shift time.Duration            // subtracted from every decode time
	ends := map[uint32]time.Duration{} // each track's end in the output, in source time minus shift
	var base time.Duration             // the output's first decode time
	i := 0                             // fragments written
	for _, c := range parts {
		b, err := readAt(c.path, c.part.Offset, c.part.Size)
		if err != nil {
			return res, err
		}
		frames := c.part.Frames
		if c.until > 0 {
			if b, frames, err = trimFragment(b, c.until, scales); err != nil {
				return res, fmt.Errorf("recorder: fragment at %d of %s: %w", c.part.Offset, filepath.Base(c.path), err)
			}
			if frames == 0 {
				continue
			}
		}
		times, err := fragmentTimes(b, scales)
		if err != nil {
			return res, fmt.Errorf("recorder: fragment at %d of %s: %w", c.part.Offset, filepath.Base(c.path), err)
		}
		first := earliest(times)
		if i == 0 {
			base = first
		} else {
			ref, ok := times[video]
			end, seen := ends[video]
			if !ok || !seen {
				for id, tt := range times { // a fragment without video: any track seen before
					if e, ok := ends[id]; ok {
						ref, end, seen = tt, e, true
						break
					}
				}
			}
			if d := ref.start - shift - end; seen && (d > gapTolerance || d < -gapTolerance) {
				shift += d
				res.Gaps++
			}
		}
		if err := retime(b, uint32(i+1), shift, scales); err != nil {
			return res, err
		}
		if _, err := out.Write(b); err != nil {
			return res, err
		}
		spans, err := moofSpans(b, tracks)
		if err != nil {
			return res, fmt.Errorf("recorder: fragment at %d of %s: %w", c.part.Offset, filepath.Base(c.path), err)
		}
		sidx.add(sidxPart{off: size, size: int64(len(b)), key: c.part.Key, bases: spans})
		var dur time.Duration
		for id, tt := range times {
			ends[id] = tt.start - shift + tt.dur
			res.Duration = max(res.Duration, ends[id]-base)
			dur = max(dur, tt.start+tt.dur-first)
		}
		if err := appendLine(&idx, indexLine{T: linePart, Off: size, Size: int64(len(b)), At: (first - shift - base).Milliseconds(),
			Dur: dur.Milliseconds(), Key: c.part.Key, Frames: frames}); err != nil {
			return res, err
		}
		size += int64(len(b))
		res.Frames += uint64(frames)
		res.Parts++
		i++
	}
	res.Size = size
	if err := sidx.write(out, head.Tracks, int64(len(init)), space); err != nil {
		return res, err
	}
	if err := out.Sync(); err != nil {
		return res, err
	}
	if err := out.Close(); err != nil {
		return res, err
	}
	// The output is done and never reported: on_record_mp4 is for
	// recordings, and a restart's scan finds it by its id.
	for _, l := range []indexLine{{T: lineEnd, Size: size, Frames: int64(res.Frames), DurationMs: res.Duration.Milliseconds(), Reason: "cut-merge"}, {T: lineReported}} {
		if err := appendLine(&idx, l); err != nil {
			return res, err
		}
	}
	if err := writeFileSync(abs+".idx", idx.Bytes()); err != nil {
		return res, err
	}
	if err := os.Rename(out.Name(), abs); err != nil {
		return res, err
	}
	r.addFile(id, rel)
	return res, nil
}

// moofSpans reads the decode times of the tracks with samples in a
// fragment (moof+mdat), as written: what the segment index refers to.
func moofSpans(frag []byte, tracks map[uint32]indexTrack) ([]trackSpan, error) {
	if len(frag) < 8 || string(frag[4:8]) != "moof" || int(binary.BigEndian.Uint32(frag)) > len(frag) {
		return nil, fmt.Errorf("%w: a fragment not starting with a moof", fmp4.ErrBox)
	}
	fr, err := parseMoof(frag[:binary.BigEndian.Uint32(frag)], tracks)
	if err != nil {
		return nil, err
	}
	spans := fr.spans[:0]
	for _, sp := range fr.spans {
		if sp.end > sp.base {
			spans = append(spans, sp)
		}
	}
	return spans, nil
}

func readAt(path string, off, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// trafs finds each traf of a fragment's moof with its track's timescale.
func trafs(frag []byte, scales map[uint32]uint32) (moof *fmp4.Box, out []fmp4.Box, err error) {
	boxes, err := fmp4.ReadBoxes(frag)
	if err != nil {
		return nil, nil, err
	}
	moof = fmp4.Find(boxes, "moof")
	if moof == nil {
		return nil, nil, fmt.Errorf("%w: no moof", fmp4.ErrBox)
	}
	for _, c := range moof.Children {
		if c.Type != "traf" {
			continue
		}
		tfhd, tfdt := fmp4.Find(c.Children, "tfhd"), fmp4.Find(c.Children, "tfdt")
		if tfhd == nil || tfdt == nil || len(tfhd.Data) < 8 || len(tfdt.Data) < 12 || tfdt.Data[0] != 1 {
			return nil, nil, fmt.Errorf("%w: a traf without tfhd or a 64-bit tfdt", fmp4.ErrBox)
		}
		if scales[binary.BigEndian.Uint32(tfhd.Data[4:])] == 0 {
			return nil, nil, fmt.Errorf("%w: a traf of an unknown track", fmp4.ErrBox)
		}
		out = append(out, c)
	}
	return moof, out, nil
}

// trackTime is one track's decode time and duration in a fragment.
type trackTime struct{ start, dur time.Duration }

// fragmentTimes reads each track's decode time and duration in a
// fragment.
func fragmentTimes(frag []byte, scales map[uint32]uint32) (map[uint32]trackTime, error) {
	_, ts, err := trafs(frag, scales)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: a moof without tracks", fmp4.ErrBox)
	}
	out := map[uint32]trackTime{}
	for _, t := range ts {
		id := binary.BigEndian.Uint32(fmp4.Find(t.Children, "tfhd").Data[4:])
		scale := uint64(scales[id])
		var total int64
		if trun := fmp4.Find(t.Children, "trun"); trun != nil {
			if _, total, _, err = parseTrun(trun.Data); err != nil {
				return nil, err
			}
		}
		d := time.Duration(uint64(total)/scale)*time.Second + time.Duration(uint64(total)%scale*uint64(time.Second)/scale)
		out[id] = trackTime{start: ticks(binary.BigEndian.Uint64(fmp4.Find(t.Children, "tfdt").Data[4:]), uint32(scale)), dur: d}
	}
	return out, nil
}

// earliest is the first decode time of a fragment's tracks (stream times
// start below zero, fmp4.TimeOrigin, so there is no sentinel).
func earliest(times map[uint32]trackTime) time.Duration {
	var first time.Duration
	n := 0
	for _, t := range times {
		if n == 0 || t.start < first {
			first = t.start
		}
		n++
	}
	return first
}

// retime rewrites a fragment in place: its sequence number, and every
// track's decode time moved back by shift.
func retime(frag []byte, seq uint32, shift time.Duration, scales map[uint32]uint32) error {
	moof, ts, err := trafs(frag, scales)
	if err != nil {
		return err
	}
	if mfhd := fmp4.Find(moof.Children, "mfhd"); mfhd != nil && len(mfhd.Data) >= 8 {
		binary.BigEndian.PutUint32(frag[mfhd.Offset+8+4:], seq)
	}
	if shift == 0 {
		return nil
	}
	for _, t := range ts {
		tfdt := fmp4.Find(t.Children, "tfdt")
		scale := scales[binary.BigEndian.Uint32(fmp4.Find(t.Children, "tfhd").Data[4:])]
		pos := tfdt.Offset + 8 + 4
		v := int64(binary.BigEndian.Uint64(frag[pos:]))
		if shift > 0 {
			v -= int64(span(shift, scale))
		} else {
			v += int64(span(-shift, scale))
		}
		binary.BigEndian.PutUint64(frag[pos:], uint64(max(v, 0)))
	}
	return nil
}

// span is a (non-negative) length of time in timescale units.
func span(d time.Duration, scale uint32) uint64 {
	s, r := uint64(d/time.Second), uint64(d%time.Second)
	return s*uint64(scale) + r*uint64(scale)/uint64(time.Second)
}
