package rtpcodec

// bitReader reads big-endian bit fields, as RFC 3640 AU headers are
// packed. Reading past the end yields ok false, never a panic.
type bitReader struct {
	b   []byte
	pos int // in bits
}

func (r *bitReader) read(n int) (uint32, bool) {
	if n == 0 {
		return 0, true
	}
	if n > 32 || r.pos+n > len(r.b)*8 {
		return 0, false
	}
	var v uint32
	for i := 0; i < n; i++ {
		bit := r.b[r.pos>>3] >> (7 - uint(r.pos&7)) & 1
		v = v<<1 | uint32(bit)
		r.pos++
	}
	return v, true
}
