package recorder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// indexVersion is the sidecar format's version (the head line's v).
const indexVersion = 1

// Kinds of sidecar lines (indexLine.T). Append-only.
const (
	lineHead     = "head"
	linePart     = "part"
	lineEnd      = "end"
	lineReported = "reported"
)

// indexLine is one line of a sidecar index. A sidecar is a head line, a
// part line per fragment in file order, an end line once the file is
// finished and a reported line once the control plane took the report.
// Lines are appended and never rewritten, except by Repair, which
// replaces the whole sidecar atomically.
type indexLine struct {
	T string `json:"t"`

	// Head.
	V      int    `json:"v,omitempty"`
	FileID string `json:"fileId,omitempty"`
	Vhost  string `json:"vhost,omitempty"`
	App    string `json:"app,omitempty"`
	Stream string `json:"stream,omitempty"`
	// StartTime is the wall-clock time of the file's first frame.
	StartTime *time.Time `json:"startTime,omitempty"`
	// BaseDTS is the stream time of the file's first frame, nanoseconds
	// (fragments carry it as fmp4.ToTimescale).
	BaseDTS  int64 `json:"baseDts,omitempty"`
	InitSize int64 `json:"initSize,omitempty"`
	// SidxSpace is the size of the space after the initialisation
	// segment reserved for the segment index (sidx.go); zero in files
	// written before there was one, whose fragments follow the init.
	SidxSpace int64        `json:"sidxSpace,omitempty"`
	Tracks    []indexTrack `json:"tracks,omitempty"`

	// Part: the fragment's byte range, its time from the file's start
	// and its duration (milliseconds), whether it starts with a video
	// keyframe, and how many frames it holds.
	Off    int64 `json:"off,omitempty"`
	Size   int64 `json:"size,omitempty"`
	At     int64 `json:"at,omitempty"`
	Dur    int64 `json:"dur,omitempty"`
	Key    bool  `json:"key,omitempty"`
	Frames int64 `json:"frames,omitempty"`

	// End (Size and Frames above are the file's totals).
	DurationMs int64  `json:"durationMs,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// indexTrack names one MP4 track of a file and its timescale, which
// Repair needs to turn fragment times back into durations.
type indexTrack struct {
	ID        uint32 `json:"id"`
	Codec     string `json:"codec"`
	Timescale uint32 `json:"timescale"`
}

// Part is one fragment of a recorded file, as its sidecar lists it.
type Part struct {
	Offset, Size int64
	// At is the part's start from the file's start; Duration its length.
	At, Duration time.Duration
	// Key is set when the part starts with a video keyframe (or the file
	// has no video): playback may start there.
	Key    bool
	Frames int64
}

// Index is a file's sidecar, read back.
type Index struct {
	head     indexLine
	Parts    []Part
	end      *indexLine
	Reported bool
}

// FileID is the file's id.
func (x *Index) FileID() string { return x.head.FileID }

// Finished reports whether the file was closed (it has an end line).
func (x *Index) Finished() bool { return x.end != nil }

// maxIndexLine bounds one sidecar line; a head line with a few tracks is
// a few hundred bytes.
const maxIndexLine = 64 << 10

// readIndex parses a sidecar. A torn last line (the engine died while
// appending it) is ignored; anything else malformed is an error.
func readIndex(path string) (*Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseIndex(b)
}

func parseIndex(b []byte) (*Index, error) {
	x := &Index{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxIndexLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		var l indexLine
		if err := json.Unmarshal(line, &l); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && bytes.HasSuffix(b, line) {
				break // the torn last line of a crash
			}
			return nil, fmt.Errorf("%w: line %d: %w", ErrIndex, n, err)
		}
		switch {
		case n == 1 && l.T != lineHead, n > 1 && l.T == lineHead:
			return nil, fmt.Errorf("%w: line %d is %q", ErrIndex, n, l.T)
		case l.T == lineHead:
			if l.V != indexVersion || l.FileID == "" || l.StartTime == nil {
				return nil, fmt.Errorf("%w: head line version %d, fileId %q", ErrIndex, l.V, l.FileID)
			}
			x.head = l
		case l.T == linePart:
			x.Parts = append(x.Parts, Part{Offset: l.Off, Size: l.Size, At: time.Duration(l.At) * time.Millisecond,
				Duration: time.Duration(l.Dur) * time.Millisecond, Key: l.Key, Frames: l.Frames})
		case l.T == lineEnd:
			e := l
			x.end = &e
		case l.T == lineReported:
			x.Reported = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIndex, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty", ErrIndex)
	}
	return x, nil
}

// appendLine writes one sidecar line.
func appendLine(w io.Writer, l indexLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// InitSize is the size of the file's initialisation segment (ftyp+moov),
// which every time-addressed answer starts with.
func (x *Index) InitSize() int64 { return x.head.InitSize }

// StartTime is the wall-clock time of the file's first frame.
func (x *Index) StartTime() time.Time { return *x.head.StartTime }

// Duration is the file's media duration (zero while it is open).
func (x *Index) Duration() time.Duration {
	if x.end == nil {
		return 0
	}
	return time.Duration(x.end.DurationMs) * time.Millisecond
}

// Span chooses the parts that play [start, start+d) of the file: from the
// last part starting with a keyframe at or before start (so a decoder can
// begin there) to the last part that begins before start+d; d <= 0 means
// to the end. It answers the byte ranges' bounds [from, to).
func (x *Index) Span(start, d time.Duration) (from, to int64, ok bool) {
	first := -1
	for i, p := range x.Parts {
		if p.At > start {
			break
		}
		if p.Key {
			first = i
		}
	}
	if first < 0 {
		for i, p := range x.Parts { // before the first part: start there
			if p.Key {
				first = i
				break
			}
		}
	}
	if first < 0 {
		return 0, 0, false
	}
	last := len(x.Parts) - 1
	if d > 0 {
		for last > first && x.Parts[last].At >= start+d {
			last--
		}
	}
	return x.Parts[first].Offset, x.Parts[last].Offset + x.Parts[last].Size, true
}
