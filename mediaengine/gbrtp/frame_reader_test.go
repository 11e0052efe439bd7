package gbrtp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func frame(pkt []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(pkt))), pkt...)
}

func TestFrameReaderSplitsAndSkips(t *testing.T) {
	a, b := bytes.Repeat([]byte{0x80}, 12), bytes.Repeat([]byte{0x81}, 1500)
	stream := append(append(append(frame(a), 0, 0), frame(b)...), 0, 0)
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{{"whole", bytes.NewReader(stream)}, {"one byte per read", iotest.OneByteReader(bytes.NewReader(stream))},
		{"half reads", iotest.HalfReader(bytes.NewReader(stream))}} {
		t.Run(tc.name, func(t *testing.T) {
			fr := NewFrameReader(tc.r)
			for _, want := range [][]byte{a, b} {
				got, err := fr.Next()
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("Next = %d bytes, %v", len(got), err)
				}
			}
			if _, err := fr.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("at the end: %v", err)
			}
			if fr.Empty != 2 {
				t.Fatalf("empty frames %d", fr.Empty)
			}
		})
	}
	fr := NewFrameReader(bytes.NewReader(frame(b)[:700]))
	if _, err := fr.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut frame: %v", err)
	}
	fr = NewFrameReader(bytes.NewReader([]byte{5}))
	if _, err := fr.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut length: %v", err)
	}
}

func FuzzFrameReader(f *testing.F) {
	pkt := []byte{0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 42, 0xbe, 0xde, 0, 1, 1, 2, 3, 4, 0, 0, 1, 0xba}
	f.Add(append(frame(pkt), frame(pkt[:12])...))
	f.Add([]byte{0, 0, 0, 13, 0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := NewFrameReader(iotest.HalfReader(bytes.NewReader(b)))
		for {
			pkt, err := fr.Next()
			if err != nil {
				return
			}
			if len(pkt) == 0 || len(pkt) > 0xffff {
				t.Fatalf("frame of %d bytes", len(pkt))
			}
			if _, payload, ok := parseRTP(pkt); ok && len(payload) > len(pkt)-12 {
				t.Fatalf("payload %d of a %d-byte packet", len(payload), len(pkt))
			}
		}
	})
}
