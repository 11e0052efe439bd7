package rbsp

import (
	"bytes"
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
		if v, err := r.UE(); err != nil || v != want {
			t.Fatalf("UE = %d, %v; want %d", v, err, want)
		}
	}
	if v, err := r.SE(); err != nil || v != -2 {
		t.Fatalf("SE = %d, %v; want -2", v, err)
	}
	if _, err := NewReader([]byte{0, 0, 0, 0, 0}).UE(); err == nil {
		t.Fatal("an endless exp-Golomb prefix must fail")
	}
	if _, err := NewReader(nil).Bits(3); err != ErrShort {
		t.Fatalf("Bits past the end = %v, want ErrShort", err)
	}
}
