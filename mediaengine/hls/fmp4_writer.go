package hls

import (
	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
)

// fmp4Writer builds fMP4 segments: one moof with a run per track. A
// sample's duration is known when the next frame of its track arrives, so
// each track's latest frame is held; at a cut, held audio frames carry over
// into the next segment.
type fmp4Writer struct {
	tracks  []*media.Track
	initSeg []byte
	held    []*media.Frame
	runs    []fmp4.Run
	seq     uint32
}

func newFMP4Writer(tracks []*media.Track) (*fmp4Writer, error) {
	init, err := fmp4.InitSegment(tracks)
	if err != nil {
		return nil, err
	}
	w := &fmp4Writer{tracks: tracks, initSeg: init, held: make([]*media.Frame, len(tracks)), runs: make([]fmp4.Run, len(tracks))}
	for i, t := range tracks {
		w.runs[i].Track = t
	}
	return w, nil
}

func (w *fmp4Writer) init() []byte { return w.initSeg }
func (w *fmp4Writer) ext() string  { return "m4s" }

func (w *fmp4Writer) write(f *media.Frame, cut bool) []byte {
	id := f.Track.ID
	if id < 0 || id >= len(w.held) || w.tracks[id] != f.Track {
		return nil
	}
	if prev := w.held[id]; prev != nil {
		scale := fmp4.Timescale(f.Track)
		base := fmp4.ToTimescale(prev.DTS, scale)
		next := fmp4.ToTimescale(f.DTS, scale)
		r := &w.runs[id]
		if len(r.Samples) == 0 {
			r.BaseTime = base
		}
		dur := uint32(0)
		if next > base {
			dur = uint32(next - base)
		}
		r.Samples = append(r.Samples, fmp4.Sample{Frame: prev, Duration: dur})
	}
	w.held[id] = f
	if !cut {
		return nil
	}
	return w.finish()
}

func (w *fmp4Writer) finish() []byte {
	var runs []fmp4.Run
	for _, r := range w.runs {
		if len(r.Samples) > 0 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	w.seq++
	data := fmp4.Fragment(w.seq, runs)
	for i := range w.runs {
		w.runs[i].Samples = nil
	}
	return data
}
