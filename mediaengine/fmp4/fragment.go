package fmp4

import (
	"encoding/binary"

	"github.com/svcplatform/svc/mediaengine/codec/nalu"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Sample is one frame in a fragment with its duration in the track's
// timescale.
type Sample struct {
	Frame    *media.Frame
	Duration uint32
}

// Run is one track's samples in a fragment, starting at BaseTime (the
// first sample's DTS in the track's timescale).
type Run struct {
	Track    *media.Track
	BaseTime uint64
	Samples  []Sample
}

// Sample flags (ISO/IEC 14496-12 8.8.3.1): a sync sample depends on no
// other; any other sample depends on others and is not a sync sample.
const (
	flagsSync    = 0x02000000
	flagsNonSync = 0x01010000
)

const (
	trunDataOffset = 0x000001
	trunDuration   = 0x000100
	trunSize       = 0x000200
	trunFlags      = 0x000400
	trunCTS        = 0x000800
	tfhdBaseIsMoof = 0x020000
)

func sampleSize(f *media.Frame) int {
	if f.Track.Codec.NALUnits() {
		return nalu.LengthPrefixedSize(f.NALUs)
	}
	return len(f.Payload)
}

// Fragment writes one moof and its mdat, in one allocation.
func Fragment(seq uint32, runs []Run) []byte { return AppendFragment(nil, seq, runs) }

// AppendFragment appends one moof and its mdat to dst (whose capacity a
// writer that reuses its buffer keeps across fragments) and returns the
// extended slice.
func AppendFragment(dst []byte, seq uint32, runs []Run) []byte {
	dst, _ = appendFragment(dst, nil, seq, runs, false)
	return dst
}

// vecMin is the smallest media payload AppendFragmentVec leaves in place:
// a smaller one (an audio frame, a parameter set) is cheaper to copy than
// to hand the kernel as one more buffer.
const vecMin = 1024

// AppendFragmentVec is AppendFragment for a vectored write (writev): it
// appends to dst the fragment's boxes, length prefixes and small payloads,
// and answers in vec the whole fragment in order as slices of dst and of
// the frames' own media bytes, which are not copied. Writing vec in order
// writes exactly what AppendFragment would. The slices of frames stay
// referenced by vec until the caller clears it.
func AppendFragmentVec(dst []byte, vec [][]byte, seq uint32, runs []Run) ([]byte, [][]byte) {
	return appendFragment(dst, vec, seq, runs, true)
}

// inlineSize is the bytes of f's sample a vectored fragment copies.
func inlineSize(f *media.Frame) int {
	if !f.Track.Codec.NALUnits() {
		if len(f.Payload) < vecMin {
			return len(f.Payload)
		}
		return 0
	}
	n := 0
	for _, u := range f.NALUs {
		n += 4
		if len(u) < vecMin {
			n += len(u)
		}
	}
	return n
}

func appendFragment(dst []byte, vec [][]byte, seq uint32, runs []Run, vectored bool) ([]byte, [][]byte) {
	moofSize := 8 + 16 // moof header, mfhd
	dataSize, inline := 0, 0
	for _, r := range runs {
		moofSize += 8 + 16 + 20 + 20 + 16*len(r.Samples) // traf, tfhd, tfdt v1, trun header, samples
		for _, s := range r.Samples {
			dataSize += sampleSize(s.Frame)
			if vectored {
				inline += inlineSize(s.Frame)
			}
		}
	}
	if !vectored {
		inline = dataSize
	}
	// Everything written below fits without growing dst, so the slices a
	// vectored fragment takes of it stay valid.
	if cap(dst)-len(dst) < moofSize+8+inline {
		grown := make([]byte, len(dst), len(dst)+moofSize+8+inline)
		copy(grown, dst)
		dst = grown
	}
	w := &boxWriter{b: dst}
	base := len(dst)
	w.start("moof")
	w.startFull("mfhd", 0, 0)
	w.u32(seq)
	w.end()
	offsets := make([]int, len(runs))
	for i, r := range runs {
		w.start("traf")
		w.startFull("tfhd", 0, tfhdBaseIsMoof)
		w.u32(TrackID(r.Track))
		w.end()
		w.startFull("tfdt", 1, 0)
		w.u64(r.BaseTime)
		w.end()
		w.startFull("trun", 1, trunDataOffset|trunDuration|trunSize|trunFlags|trunCTS)
		w.u32(uint32(len(r.Samples)))
		offsets[i] = len(w.b)
		w.u32(0) // data offset, patched below
		scale := Timescale(r.Track)
		for _, s := range r.Samples {
			f := s.Frame
			w.u32(s.Duration)
			w.u32(uint32(sampleSize(f)))
			if f.Keyframe || f.Track.Kind() != media.KindVideo {
				w.u32(flagsSync)
			} else {
				w.u32(flagsNonSync)
			}
			cts := int64(ToTimescale(f.PTS, scale)) - int64(ToTimescale(f.DTS, scale))
			w.u32(uint32(int32(cts)))
		}
		w.end()
		w.end()
	}
	w.end()
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(8+dataSize))
	w.b = append(w.b, 'm', 'd', 'a', 't')
	at := len(w.b) - base
	for i, r := range runs {
		binary.BigEndian.PutUint32(w.b[offsets[i]:], uint32(at))
		for _, s := range r.Samples {
			at += sampleSize(s.Frame)
		}
	}
	if !vectored {
		for _, r := range runs {
			for _, s := range r.Samples {
				if s.Frame.Track.Codec.NALUnits() {
					w.b = nalu.AppendLengthPrefixed(w.b, s.Frame.NALUs)
				} else {
					w.b = append(w.b, s.Frame.Payload...)
				}
			}
		}
		return w.b, vec
	}
	// mark is where the bytes of dst not yet in vec begin.
	mark := base
	ref := func(b []byte) {
		vec = append(vec, w.b[mark:len(w.b):len(w.b)], b)
		mark = len(w.b)
	}
	for _, r := range runs {
		for _, s := range r.Samples {
			if !s.Frame.Track.Codec.NALUnits() {
				if p := s.Frame.Payload; len(p) >= vecMin {
					ref(p)
				} else {
					w.b = append(w.b, p...)
				}
				continue
			}
			for _, u := range s.Frame.NALUs {
				w.b = binary.BigEndian.AppendUint32(w.b, uint32(len(u)))
				if len(u) >= vecMin {
					ref(u)
				} else {
					w.b = append(w.b, u...)
				}
			}
		}
	}
	if mark < len(w.b) {
		vec = append(vec, w.b[mark:len(w.b):len(w.b)])
	}
	return w.b, vec
}
