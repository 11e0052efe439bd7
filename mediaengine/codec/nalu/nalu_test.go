package nalu

import (
	"bytes"
	"testing"
)

func TestSplitAnnexB(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want [][]byte
	}{
		{"empty", nil, nil},
		{"bare unit", []byte{0x65, 1, 2}, [][]byte{{0x65, 1, 2}}},
		{"3 and 4 byte codes", []byte{0, 0, 0, 1, 0x67, 1, 0, 0, 1, 0x68, 2}, [][]byte{{0x67, 1}, {0x68, 2}}},
		{"trailing zeros", []byte{0, 0, 1, 0x65, 9, 0, 0}, [][]byte{{0x65, 9}}},
		{"empty unit between codes", []byte{0, 0, 1, 0, 0, 1, 0x41}, [][]byte{{0x41}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitAnnexB(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d units % x, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.want[i]) {
					t.Fatalf("unit %d = % x, want % x", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestLengthPrefixedRoundTrip(t *testing.T) {
	units := [][]byte{{0x67, 1, 2}, {0x68}, bytes.Repeat([]byte{0x65}, 300)}
	b := AppendLengthPrefixed(nil, units)
	if len(b) != LengthPrefixedSize(units) {
		t.Fatalf("size %d, LengthPrefixedSize %d", len(b), LengthPrefixedSize(units))
	}
	back, err := SplitLengthPrefixed(b, 4)
	if err != nil || len(back) != 3 || !bytes.Equal(back[2], units[2]) {
		t.Fatalf("round trip = %d units, %v", len(back), err)
	}
	annexB := AppendAnnexB(nil, units)
	back, err = SplitAnnexB(annexB)
	if err != nil || len(back) != 3 || !bytes.Equal(back[0], units[0]) {
		t.Fatalf("Annex-B round trip = %d units, %v", len(back), err)
	}
	for _, bad := range [][]byte{{0, 0, 0, 9, 1}, {0, 0}} {
		if _, err := SplitLengthPrefixed(bad, 4); err == nil {
			t.Errorf("SplitLengthPrefixed(% x) accepted a truncated unit", bad)
		}
	}
	if _, err := SplitLengthPrefixed(b, 3); err == nil {
		t.Error("a 3-byte length size must be refused")
	}
}

// FuzzAnnexB checks that splitting never panics, that units never contain a
// start code, and that Annex-B -> length-prefixed -> split gives the units
// back.
func FuzzAnnexB(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0x67, 0x42, 0, 0x1e, 0, 0, 1, 0x68, 0xce, 0, 0, 1, 0x65, 0x88})
	f.Add([]byte{0, 0, 1})
	f.Add([]byte{0x65})
	f.Fuzz(func(t *testing.T, b []byte) {
		units, err := SplitAnnexB(b)
		if err != nil {
			return
		}
		for _, u := range units {
			if bytes.Contains(u, []byte{0, 0, 1}) && bytes.Contains(b, []byte{0, 0, 1}) {
				t.Fatalf("unit % x still holds a start code", u)
			}
		}
		back, err := SplitLengthPrefixed(AppendLengthPrefixed(nil, units), 4)
		if err != nil || len(back) != len(units) {
			t.Fatalf("length-prefixed round trip: %d units, %v; want %d", len(back), err, len(units))
		}
	})
}

// FuzzLengthPrefixed feeds arbitrary bytes to the length-prefixed splitter.
func FuzzLengthPrefixed(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 0x65, 1}, 4)
	f.Add([]byte{0, 1, 0x41}, 2)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 4)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		units, err := SplitLengthPrefixed(b, size)
		if err != nil {
			return
		}
		total := 0
		for _, u := range units {
			total += len(u) + size
		}
		if total > len(b) {
			t.Fatalf("units cover %d bytes of %d", total, len(b))
		}
	})
}
