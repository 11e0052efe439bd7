package recording

import "testing"

// TestCheckDisk: each volume state fails the items it should, skips what
// the engine could not test and passes the rest.
func TestCheckDisk(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      DiskState
		passed bool
		want   string // statuses of DiskCheckItems in order: P, F, S
	}{
		{"normal", DiskState{State: VolumeNormal, IdentityState: "Verified", FreeBytes: 10, LowSpaceBytes: 5, FullBytes: 2}, true, "PPPPPP"},
		{"low", DiskState{State: VolumeLowSpace, IdentityState: "Verified", FreeBytes: 4, LowSpaceBytes: 5, FullBytes: 2}, false, "PPPPPF"},
		{"full", DiskState{State: VolumeFull, IdentityState: "Verified", FreeBytes: 1, LowSpaceBytes: 5, FullBytes: 2}, false, "PPPPFF"},
		{"swapped", DiskState{State: VolumeMismatch, IdentityState: "Mismatch", IdentityID: "a", FoundIdentityID: "b"}, false, "PPFSSS"},
		{"unbound", DiskState{State: VolumeNormal, IdentityState: "Unbound", FreeBytes: 10, LowSpaceBytes: 5, FullBytes: 2}, false, "PPFPPP"},
		{"read-only", DiskState{State: VolumeReadOnly, IdentityState: "ReadOnly"}, false, "PPPFSS"},
		{"missing", DiskState{State: VolumeMissing, IdentityState: "Missing"}, false, "PFSSSS"},
		{"unknown", DiskState{State: VolumeUnknown, Error: "agent offline"}, false, "FSSSSS"},
	} {
		c := checkDisk(tc.d)
		got := ""
		for i, r := range c.Checks {
			if r.Key != DiskCheckItems[i].Key {
				t.Fatalf("%s: item %d is %s, want %s", tc.name, i, r.Key, DiskCheckItems[i].Key)
			}
			if (r.Status == CheckFail) != (r.Detail != "") {
				t.Fatalf("%s: %s %s with detail %q", tc.name, r.Key, r.Status, r.Detail)
			}
			got += r.Status[:1]
		}
		if got != tc.want || c.Passed != tc.passed {
			t.Fatalf("%s: %s passed=%v, want %s passed=%v (%+v)", tc.name, got, c.Passed, tc.want, tc.passed, c.Checks)
		}
	}
}

// TestWritingOf: the guard pauses writing exactly on the states where the
// engine refuses new files.
func TestWritingOf(t *testing.T) {
	for state, want := range map[string]string{VolumeNormal: WritingActive, VolumeLowSpace: WritingActive, VolumeFull: WritingPaused,
		VolumeMismatch: WritingPaused, VolumeMissing: WritingPaused, VolumeReadOnly: WritingPaused, VolumeUnknown: WritingUnknown} {
		if got := writingOf(state); got != want {
			t.Fatalf("%s: %s, want %s", state, got, want)
		}
	}
}
