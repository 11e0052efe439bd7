package engineapi

import (
	"errors"
	"testing"
)

// TestCheckFallbackRoot: a fallback root inside the recording root (the
// configured one or <dataDir>/record), around it or the same is
// ErrFallbackOverlap; a sibling, even one sharing a name prefix, is not.
// Validate does not refuse any of them (an engine started with one must
// still record on its root).
func TestCheckFallbackRoot(t *testing.T) {
	for _, tc := range []struct {
		root, dataDir, fallback string
		overlap                 bool
	}{
		{"/srv/rec", "", "/srv/rec/fb", true},
		{"/srv/rec", "", "/srv", true},
		{"/srv/rec", "", "/srv/rec", true},
		{"", "/var/lib/e", "/var/lib/e/record/x", true},
		{"", "/var/lib/e", "/var/lib/e", true},
		{"/srv/rec", "", "/srv/rec2", false},
		{"/srv/rec", "", "/mnt/fb", false},
		{"/srv/rec", "", "", false},
	} {
		c := Defaults()
		c.NodeID, c.DataDir = "n1", tc.dataDir
		c.Recording.Root, c.Recording.FallbackRoot = tc.root, tc.fallback
		if err := c.Validate(); err != nil {
			t.Fatalf("%+v: Validate: %v", tc, err)
		}
		if err := c.CheckFallbackRoot(); errors.Is(err, ErrFallbackOverlap) != tc.overlap {
			t.Fatalf("%+v: %v", tc, err)
		}
	}
}
