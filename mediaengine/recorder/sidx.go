package recorder

import (
	"encoding/binary"
	"io"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// A finished file carries a segment index (sidx, ISO/IEC 14496-12 8.16.3)
// right after its initialisation segment: one reference per run of parts
// from a keyframe part to the next, with its byte size and time. A player
// reading the file over HTTP Range (ffmpeg's mov demuxer, a browser's MSE
// player) then seeks with one read of the index and one of the keyframe's
// fragment. Without it ffmpeg's mov demuxer reads every moof of the file
// before it can seek (it only stops early when an sidx covers the whole
// file); an mfra at the end is not read by ffmpeg unless asked to
// (-use_mfra_for), which is why the index goes at the front.
//
// The writer only appends, so createSegment reserves the space as a free
// box that finish overwrites with the sidx and a smaller free box. Files
// written before this (no sidxSpace in the sidecar head) have neither.

// sidxHeader and sidxRef are the byte sizes of a version 1 sidx without
// its references and of one reference.
const (
	sidxHeader = 40
	sidxRef    = 12
)

// sidxRefs is how many references a file's reserved space holds: twice
// the parts a segment of segDur is expected to have, so that parts cut
// shorter than partDur still get one reference each (a file with more
// merges neighbours). The bounds keep a short test segment's index from
// being tiny and an odd configuration's from taking more than 48 KB.
func sidxRefs(segDur, partDur time.Duration) int {
	n := 32
	if partDur > 0 {
		n = int(2*segDur/partDur) + 16
	}
	return min(max(n, 32), 4096)
}

// sidxSpace is the size of the free box reserved for refs references.
func sidxSpace(refs int) int64 { return int64(sidxHeader + sidxRef*refs) }

// freeBox is the header of a free box of size n (its payload is
// whatever the file holds there, zeros as written).
func freeBox(n int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint32(b, uint32(n))
	copy(b[4:], "free")
	return b
}

// freeSpace is a free box of n bytes, zeros after its header: the space a
// file reserves after its init for the index.
func freeSpace(n int64) []byte {
	b := make([]byte, n)
	copy(b, freeBox(n))
	return b
}

// sidxPart is one fragment as the index needs it: its bytes, whether it
// starts with a keyframe and the decode time of each track's first sample
// in it (timescale units; tracks without samples in it are absent).
type sidxPart struct {
	off, size int64
	key       bool
	bases     []trackSpan
}

func (p sidxPart) base(id uint32) (uint64, bool) {
	for _, s := range p.bases {
		if s.id == id {
			return s.base, true
		}
	}
	return 0, false
}

// sidxTracks orders the tracks an index covers: the first video track
// first (seeking is by its keyframes), then the others. Each track gets
// its own sidx: ffmpeg 5's mov demuxer compares a track without one to
// another track's times in its own timescale, and so seeks the audio to
// the wrong fragment.
func sidxTracks(tracks []indexTrack) []indexTrack {
	out := make([]indexTrack, 0, len(tracks))
	for _, t := range tracks {
		if media.Codec(t.Codec).Kind() == media.KindVideo && len(out) == 0 {
			out = append(out, t)
		}
	}
	for _, t := range tracks {
		if len(out) == 0 || t.ID != out[0].ID {
			out = append(out, t)
		}
	}
	return out
}

// buildSidx answers the bytes to write at a file's reserved space
// (space bytes at offset at): an sidx per track over parts and, when room
// is left, a free box up to the first part. ends holds where each track's
// last sample ends (decode time, timescale units). ok is false when the
// parts cannot be indexed (none, not contiguous after the space, a track
// in none of them, or a reference beyond the format's 31 or 32 bits); the
// space then stays a free box. n is the length of the sidx boxes in b.
func buildSidx(parts []sidxPart, tracks []indexTrack, ends map[uint32]uint64, at, space int64) (b []byte, n int64, ok bool) {
	tracks = sidxTracks(tracks)
	if len(parts) == 0 || len(tracks) == 0 || space < int64(len(tracks))*sidxSpace(1) || parts[0].off != at+space {
		return nil, 0, false
	}
	for _, t := range tracks {
		if t.Timescale == 0 {
			return nil, 0, false
		}
	}
	type ref struct {
		size        int64
		key         bool
		first, last int // its parts
	}
	// One reference from each keyframe part to the next; the first also
	// takes what comes before the first keyframe.
	var refs []ref
	next := parts[0].off
	for i, p := range parts {
		if p.off != next {
			return nil, 0, false
		}
		next = p.off + p.size
		if i == 0 || p.key {
			refs = append(refs, ref{key: p.key, first: i})
		}
		r := &refs[len(refs)-1]
		r.size += p.size
		r.last = i
	}
	// ept is a track's time in a reference: its first sample's decode
	// time. ffmpeg takes it for the decode time of the track's samples in
	// the reference's first moof, so it must be exactly that moof's tfdt
	// (a track absent from that moof takes it from the tfdt it has).
	ept := func(r ref, id uint32) (uint64, bool) {
		for i := r.first; i <= r.last; i++ {
			if v, ok := parts[i].base(id); ok {
				return v, true
			}
		}
		return 0, false
	}
	merge := func(i int) { // joins reference i+1 into i
		refs[i].size += refs[i+1].size
		refs[i].last = refs[i+1].last
		refs = append(refs[:i+1], refs[i+2:]...)
	}
	// Every reference needs a time for every track: one missing a track
	// joins its predecessor (the first joins its successor).
	for _, t := range tracks {
		for i := 0; i < len(refs); {
			switch _, ok := ept(refs[i], t.ID); {
			case ok:
				i++
			case i > 0:
				merge(i - 1)
			case len(refs) > 1:
				key := refs[0].key
				merge(0)
				refs[0].key = key
			default:
				return nil, 0, false
			}
		}
	}
	need := func() int64 { return int64(len(tracks)) * sidxSpace(len(refs)) }
	for need() > space {
		for i := 0; i+1 < len(refs); i++ { // halves the references
			merge(i)
		}
	}
	// The space left must hold a free box (8 bytes) or be nothing.
	for rest := space - need(); rest > 0 && rest < 8; rest = space - need() {
		if len(refs) < 2 {
			return nil, 0, false
		}
		merge(len(refs) - 2)
	}
	b = make([]byte, 0, space)
	size := sidxSpace(len(refs))
	for k, t := range tracks {
		first, _ := ept(refs[0], t.ID)
		b = binary.BigEndian.AppendUint32(b, uint32(size))
		b = append(b, "sidx"...)
		b = binary.BigEndian.AppendUint32(b, 1<<24) // version 1, no flags
		b = binary.BigEndian.AppendUint32(b, t.ID)
		b = binary.BigEndian.AppendUint32(b, t.Timescale)
		b = binary.BigEndian.AppendUint64(b, first)
		// first_offset: from the end of this sidx to the first fragment
		// (the next tracks' sidx and the free box that fills the rest).
		b = binary.BigEndian.AppendUint64(b, uint64(space-int64(k+1)*size))
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(len(refs)))
		for i, r := range refs {
			start, _ := ept(r, t.ID)
			stop := ends[t.ID]
			if i+1 < len(refs) {
				stop, _ = ept(refs[i+1], t.ID)
			}
			if r.size > 1<<31-1 || stop < start || stop-start > 1<<32-1 {
				return nil, 0, false
			}
			b = binary.BigEndian.AppendUint32(b, uint32(r.size))
			b = binary.BigEndian.AppendUint32(b, uint32(stop-start))
			sap := uint32(0)
			if r.key {
				sap = 1<<31 | 1<<28 // starts with a SAP of type 1
			}
			b = binary.BigEndian.AppendUint32(b, sap)
		}
	}
	n = int64(len(b))
	if rest := space - n; rest > 0 {
		b = append(b, freeBox(rest)...)
	}
	return b, n, true
}

// sidxIndex is what a file's segment index is built from, gathered
// fragment by fragment as the file is written, repaired or cut: its parts
// and where each track's samples end.
type sidxIndex struct {
	parts []sidxPart
	ends  map[uint32]uint64
}

// add notes one fragment.
func (x *sidxIndex) add(p sidxPart) {
	if x.ends == nil {
		x.ends = map[uint32]uint64{}
	}
	for _, sp := range p.bases {
		x.ends[sp.id] = max(x.ends[sp.id], sp.end)
	}
	x.parts = append(x.parts, p)
}

// write writes the index into the space reserved at at; the free box's
// header goes first, so that a crash in between leaves a file whose boxes
// still chain (Repair rewrites the space anyway).
func (x *sidxIndex) write(w io.WriterAt, tracks []indexTrack, at, space int64) error {
	b, n, ok := buildSidx(x.parts, tracks, x.ends, at, space)
	if !ok {
		return nil
	}
	if n < int64(len(b)) {
		if _, err := w.WriteAt(b[n:], at+n); err != nil {
			return err
		}
	}
	_, err := w.WriteAt(b[:n], at)
	return err
}
