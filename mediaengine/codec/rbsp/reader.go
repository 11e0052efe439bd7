// Package rbsp reads the raw byte sequence payload of H.264 and H.265
// parameter sets: emulation prevention bytes removed, then fixed-width and
// exp-Golomb coded fields (ITU-T H.264 7.2 and 9.1). Every read is bounds
// checked, because parameter sets come from cameras and the network.
//
// The Reader's error is sticky, as in bufio.Scanner: once a read runs past
// the data or meets an invalid code, every later read returns zero and Err
// reports the first failure, so a parser reads a whole syntax structure and
// checks once.
package rbsp

import "errors"

// Errors of the Reader.
var (
	ErrShort   = errors.New("rbsp: data ends inside a field")
	ErrGolomb  = errors.New("rbsp: exp-Golomb code longer than 32 bits")
	ErrTooWide = errors.New("rbsp: field wider than 32 bits")
)

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
	err error
}

// NewReader reads b, which must already be unescaped.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err is the first error any read met.
func (r *Reader) Err() error { return r.err }

// Left is the number of unread bits.
func (r *Reader) Left() int { return len(r.b)*8 - r.pos }

func (r *Reader) fail(err error) uint32 {
	if r.err == nil {
		r.err = err
	}
	return 0
}

// Bits reads n <= 32 bits.
func (r *Reader) Bits(n int) uint32 {
	if r.err != nil {
		return 0
	}
	if n > 32 || n < 0 {
		return r.fail(ErrTooWide)
	}
	if r.Left() < n {
		return r.fail(ErrShort)
	}
	var v uint32
	for i := 0; i < n; i++ {
		v = v<<1 | uint32(r.b[r.pos>>3]>>(7-uint(r.pos&7)))&1
		r.pos++
	}
	return v
}

// Flag reads one bit as a boolean.
func (r *Reader) Flag() bool { return r.Bits(1) == 1 }

// Skip skips n bits.
func (r *Reader) Skip(n int) {
	if r.err != nil {
		return
	}
	if n < 0 || r.Left() < n {
		r.fail(ErrShort)
		return
	}
	r.pos += n
}

// UE reads an unsigned exp-Golomb code (ue(v)).
func (r *Reader) UE() uint32 {
	zeros := 0
	for r.err == nil && r.Bits(1) == 0 {
		zeros++
		if zeros > 31 {
			return r.fail(ErrGolomb)
		}
	}
	if r.err != nil {
		return 0
	}
	if zeros == 0 {
		return 0
	}
	return (1<<uint(zeros) - 1) + r.Bits(zeros)
}

// SE reads a signed exp-Golomb code (se(v)).
func (r *Reader) SE() int32 {
	v := r.UE()
	if v&1 == 1 {
		return int32((v + 1) / 2)
	}
	return -int32(v / 2)
}
