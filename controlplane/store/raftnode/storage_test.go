package raftnode

import "testing"

// The reserve and the raft log's segment follow the volume, and writes are
// always refused before the log would have to refuse an append.
func TestStorageSizing(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name           string
		total, reserve uint64
		segment        int
		wantReserve    uint64
		wantSegment    int
	}{
		{"20 MiB volume", 20 * mib, 0, 0, 4 * mib, 1 * mib},
		{"64 MiB volume: the reserve stays above the log's need", 64 * mib, 0, 0, 6 * mib, 4 * mib},
		{"1 GiB volume", 1024 * mib, 0, 0, 66 * mib, 64 * mib},
		{"100 GiB volume", 100 * 1024 * mib, 0, 0, 1024 * mib, 64 * mib},
		{"a reserve set too low is raised", 20 * mib, 1 * mib, 0, 3 * mib, 1 * mib},
		{"a large segment on a small volume", 20 * mib, 0, 8 * mib, 10 * mib, 8 * mib},
		{"settings kept when sound", 1024 * mib, 200 * mib, 16 * mib, 200 * mib, 16 * mib},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, s := sizing(tc.total, tc.reserve, tc.segment)
			if r != tc.wantReserve || s != tc.wantSegment {
				t.Fatalf("sizing(%d MiB, %d, %d) = reserve %d MiB, segment %d MiB; want %d MiB, %d MiB",
					tc.total/mib, tc.reserve, tc.segment, r/mib, s/mib, tc.wantReserve/mib, tc.wantSegment/mib)
			}
			if r < uint64(s)+logMargin {
				t.Fatalf("the reserve %d is below what the log needs", r)
			}
		})
	}
}
