package glass

import "testing"

// TestStampRoundTrip: a drawn stamp reads back, and a frame whose blocks
// and complements agree is refused.
func TestStampRoundTrip(t *testing.T) {
	f := make([]byte, Width*Height)
	for _, stamp := range []uint32{0, 1, 0x80000000, 0xdeadbeef, 0xffffffff} {
		DrawFrame(f, 7, stamp)
		if got, ok := ReadStamp(f); !ok || got != stamp {
			t.Fatalf("stamp %#x read as %#x %v", stamp, got, ok)
		}
	}
	for i := range f {
		f[i] = 235
	}
	if _, ok := ReadStamp(f); ok {
		t.Fatal("a white frame read as a stamp")
	}
	if l := Latency(int64(1)<<32+5, 0xfffffffe); l != 7 {
		t.Fatalf("latency across the wrap: %v", l)
	}
}
