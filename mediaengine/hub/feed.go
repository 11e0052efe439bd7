package hub

// feed is one format's fan-out point within a stream: the format's muxer,
// its readers and its GOP cache. The raw feed (muxer nil) carries frames
// as they are and exists for the stream's whole life, because its GOP cache
// seeds every format feed created later.
type feed struct {
	name    string
	muxer   Muxer
	header  []byte
	readers []*Reader
	gop     []*Packet
	// gopFull is set when the GOP outgrew the cache bound; the cache stays
	// empty until the next keyframe and new readers wait for that.
	gopFull bool
}

// cache keeps p in the GOP cache: a keyframe restarts it.
func (f *feed) cache(p *Packet, limit int) {
	if p.Keyframe {
		clear(f.gop)
		f.gop = append(f.gop[:0], p)
		f.gopFull = false
		return
	}
	if f.gopFull || len(f.gop) == 0 {
		return
	}
	if len(f.gop) >= limit {
		clear(f.gop)
		f.gop = f.gop[:0]
		f.gopFull = true
		return
	}
	f.gop = append(f.gop, p)
}

func (f *feed) remove(r *Reader) {
	last := len(f.readers) - 1
	if r.idx > last || f.readers[r.idx] != r {
		return
	}
	f.readers[r.idx] = f.readers[last]
	f.readers[r.idx].idx = r.idx
	f.readers[last] = nil
	f.readers = f.readers[:last]
}

// flush wakes every reader with queued packets (merged writes).
func (f *feed) flush() {
	for _, r := range f.readers {
		r.flush()
	}
}
