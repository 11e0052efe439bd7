// Package rbsp reads the raw byte sequence payload of H.264 and H.265
// parameter sets: emulation prevention bytes removed, then fixed-width and
// exp-Golomb coded fields (ITU-T H.264 7.2 and 9.1). Every read is bounds
// checked, because parameter sets come from cameras and the network.
package rbsp

import "errors"

// ErrShort is returned when a field runs past the end of the data.
var ErrShort = errors.New("rbsp: data ends inside a field")

// Unescape removes emulation prevention bytes (00 00 03 -> 00 00). It
// returns b itself when there is none, so the common case costs nothing.
func Unescape(b []byte) []byte {
	i := 0
	for ; i+2 < len(b); i++ {
		if b[i] == 0 && b[i+1] == 0 && b[i+2] == 3 {
			break
		}
	}
	if i+2 >= len(b) {
		return b
	}
	out := make([]byte, 0, len(b))
	zeros := 0
	for _, c := range b {
		if zeros >= 2 && c == 3 {
			zeros = 0
			continue
		}
		out = append(out, c)
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
	}
	return out
}

// Reader reads bits most significant first.
type Reader struct {
	b   []byte
	pos int // in bits
}

// NewReader reads b, which must already be unescaped.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Left is the number of unread bits.
func (r *Reader) Left() int { return len(r.b)*8 - r.pos }

// Bit reads one bit.
func (r *Reader) Bit() (uint32, error) {
	if r.pos >= len(r.b)*8 {
		return 0, ErrShort
	}
	v := uint32(r.b[r.pos>>3]>>(7-uint(r.pos&7))) & 1
	r.pos++
	return v, nil
}

// Flag reads one bit as a boolean.
func (r *Reader) Flag() (bool, error) {
	v, err := r.Bit()
	return v == 1, err
}

// Bits reads n <= 32 bits.
func (r *Reader) Bits(n int) (uint32, error) {
	if n > 32 || n < 0 {
		return 0, errors.New("rbsp: field wider than 32 bits")
	}
	if r.Left() < n {
		return 0, ErrShort
	}
	var v uint32
	for i := 0; i < n; i++ {
		v = v<<1 | uint32(r.b[r.pos>>3]>>(7-uint(r.pos&7)))&1
		r.pos++
	}
	return v, nil
}

// Skip skips n bits.
func (r *Reader) Skip(n int) error {
	if n < 0 || r.Left() < n {
		return ErrShort
	}
	r.pos += n
	return nil
}

// UE reads an unsigned exp-Golomb code (ue(v)).
func (r *Reader) UE() (uint32, error) {
	zeros := 0
	for {
		b, err := r.Bit()
		if err != nil {
			return 0, err
		}
		if b == 1 {
			break
		}
		zeros++
		if zeros > 31 {
			return 0, errors.New("rbsp: exp-Golomb code longer than 32 bits")
		}
	}
	if zeros == 0 {
		return 0, nil
	}
	v, err := r.Bits(zeros)
	if err != nil {
		return 0, err
	}
	return (1<<uint(zeros) - 1) + v, nil
}

// SE reads a signed exp-Golomb code (se(v)).
func (r *Reader) SE() (int32, error) {
	v, err := r.UE()
	if err != nil {
		return 0, err
	}
	if v&1 == 1 {
		return int32((v + 1) / 2), nil
	}
	return -int32(v / 2), nil
}
