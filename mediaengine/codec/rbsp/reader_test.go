package rbsp

import (
	"bytes"
	"errors"
	"testing"
)

func TestUnescape(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte{1, 2, 3}, []byte{1, 2, 3}},
		{[]byte{0, 0, 3, 1}, []byte{0, 0, 1}},
		{[]byte{0, 0, 3, 0, 0, 3}, []byte{0, 0, 0, 0}},
		{[]byte{0, 3, 0}, []byte{0, 3, 0}},
	} {
		if got := Unescape(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("Unescape(% x) = % x, want % x", tc.in, got, tc.want)
		}
	}
}

func TestExpGolomb(t *testing.T) {
	// 1 | 010 | 011 | 00100 | 00101 -> ue 0,1,2,3 then se -2
	r := NewReader([]byte{0b10100110, 0b01000010, 0b10000000})
	for _, want := range []uint32{0, 1, 2, 3} {
		if v := r.UE(); v != want {
			t.Fatalf("UE = %d; want %d", v, want)
		}
	}
	if v := r.SE(); v != -2 || r.Err() != nil {
		t.Fatalf("SE = %d, %v; want -2", v, r.Err())
	}
	r = NewReader([]byte{0, 0, 0, 0, 0})
	if r.UE(); !errors.Is(r.Err(), ErrGolomb) {
		t.Fatalf("an endless exp-Golomb prefix: %v", r.Err())
	}
	r = NewReader(nil)
	if r.Bits(3); !errors.Is(r.Err(), ErrShort) {
		t.Fatalf("Bits past the end = %v, want ErrShort", r.Err())
	}
	if r.UE() != 0 || !errors.Is(r.Err(), ErrShort) {
		t.Fatal("the first error must stick")
	}
}
