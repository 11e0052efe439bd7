package recorder

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/svcplatform/svc/mediaengine/fmp4"
)

// trimmedRun is one track's samples kept from a fragment, with their bytes.
type trimmedRun struct {
	trackID uint32
	base    uint64
	samples []fmp4.TrunSample
	data    []byte
}

// trimFragment keeps the samples of a fragment whose decode time is before
// until past the fragment's first decode time, so a cut ends at the frame
// the range asks for instead of at the end of a part. The samples kept are
// copied byte for byte and keep their durations, flags and composition
// offsets; the moof is written again in the recorder's own layout (one
// traf per track, a 64-bit tfdt, a trun with every per-sample field), the
// only one it reads. It answers the new fragment and its frame count.
func trimFragment(frag []byte, until time.Duration, scales map[uint32]uint32) ([]byte, int64, error) {
	moof, ts, err := trafs(frag, scales)
	if err != nil {
		return nil, 0, err
	}
	times, err := fragmentTimes(frag, scales)
	if err != nil {
		return nil, 0, err
	}
	cutoff := earliest(times) + until
	var runs []trimmedRun
	var kept int64
	for _, t := range ts {
		id := binary.BigEndian.Uint32(fmp4.Find(t.Children, "tfhd").Data[4:])
		scale := scales[id]
		trun := fmp4.Find(t.Children, "trun")
		if trun == nil {
			continue
		}
		if flags := binary.BigEndian.Uint32(trun.Data) & 0xffffff; flags != trunDataOffset|trunDuration|trunSize|trunFlags|trunCTS {
			return nil, 0, fmt.Errorf("%w: a trun with flags %#x is not the recorder's", fmp4.ErrBox, flags)
		}
		off, samples, err := fmp4.ParseTrun(trun.Data)
		if err != nil {
			return nil, 0, err
		}
		base := binary.BigEndian.Uint64(fmp4.Find(t.Children, "tfdt").Data[4:])
		pos, dts, size := moof.Offset+int(off), base, 0
		n := 0
		for _, s := range samples {
			if ticks(dts, scale) >= cutoff {
				break
			}
			dts += uint64(s.Duration)
			size += int(s.Size)
			n++
		}
		if pos < 0 || pos+size > len(frag) {
			return nil, 0, fmt.Errorf("%w: samples past the fragment", fmp4.ErrBox)
		}
		if n == 0 {
			continue
		}
		runs = append(runs, trimmedRun{trackID: id, base: base, samples: samples[:n], data: frag[pos : pos+size]})
		kept += int64(n)
	}
	if kept == 0 {
		return nil, 0, nil
	}
	return buildFragment(runs), kept, nil
}

// buildFragment writes a moof and its mdat as fmp4.AppendFragment lays
// them out, from samples already encoded; the sequence number is left 0
// for retime to set.
func buildFragment(runs []trimmedRun) []byte {
	moofSize, dataSize := 8+16, 0
	for _, r := range runs {
		moofSize += 8 + 16 + 20 + 20 + 16*len(r.samples)
		dataSize += len(r.data)
	}
	b := make([]byte, 0, moofSize+8+dataSize)
	u32 := func(v uint32) { b = binary.BigEndian.AppendUint32(b, v) }
	box := func(size int, typ string) { u32(uint32(size)); b = append(b, typ...) }
	box(moofSize, "moof")
	box(16, "mfhd")
	u32(0)
	u32(0)
	offset := moofSize + 8
	for _, r := range runs {
		box(8+16+20+20+16*len(r.samples), "traf")
		box(16, "tfhd")
		u32(0x020000) // default-base-is-moof
		u32(r.trackID)
		box(20, "tfdt")
		u32(1 << 24) // version 1: a 64-bit decode time
		b = binary.BigEndian.AppendUint64(b, r.base)
		box(20+16*len(r.samples), "trun")
		u32(1<<24 | trunDataOffset | trunDuration | trunSize | trunFlags | trunCTS)
		u32(uint32(len(r.samples)))
		u32(uint32(offset))
		for _, s := range r.samples {
			u32(s.Duration)
			u32(s.Size)
			u32(s.Flags)
			u32(uint32(s.CTS))
		}
		offset += len(r.data)
	}
	box(8+dataSize, "mdat")
	for _, r := range runs {
		b = append(b, r.data...)
	}
	return b
}
