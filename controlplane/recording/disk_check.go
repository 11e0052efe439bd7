package recording

import (
	"context"
	"strconv"

	"github.com/svcplatform/svc/shared/engineapi"
)

// A disk check item's outcome.
const (
	CheckPass    = "Pass"
	CheckFail    = "Fail"
	CheckSkipped = "Skipped"
)

// DiskCheckItem is one check run on every media host's recording root
// (GET /api/v2/recording/disk-check-template lists them in this order).
type DiskCheckItem struct {
	Key         string `json:"key"`
	Description string `json:"description"`
}

// DiskCheckItems are the checks of a disk check.
var DiskCheckItems = []DiskCheckItem{
	{"engine-reachable", "The media host's engine answers through its agent."},
	{"root-present", "The recording root exists and is a directory."},
	{"identity-verified", "The root was validated and holds the disk identity marker it is bound to, on the bound filesystem (not a swapped disk)."},
	{"writable", "The engine can create files in the root."},
	{"above-full", "Free space is at or above the full watermark (new files may start)."},
	{"above-low-space", "Free space is at or above the low watermark."},
}

// CheckResult is one item's outcome on one host.
type CheckResult struct {
	Key    string `json:"key"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// DiskCheck is one media host's checked recording root: Passed when no
// item failed.
type DiskCheck struct {
	DiskState
	Passed bool          `json:"passed"`
	Checks []CheckResult `json:"checks"`
}

// CheckDisks has every media host's engine check its recording root now
// (identity marker, a write probe, the watermarks, retention: what
// DiskStates reads) and answers each item of DiskCheckItems per host.
func (s *Service) CheckDisks(ctx context.Context) ([]DiskCheck, error) {
	states, err := s.DiskStates(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DiskCheck, 0, len(states))
	for _, d := range states {
		out = append(out, checkDisk(d))
	}
	return out, nil
}

func checkDisk(d DiskState) DiskCheck {
	c := DiskCheck{DiskState: d, Passed: true, Checks: make([]CheckResult, 0, len(DiskCheckItems))}
	set := func(key string, pass bool, skip bool, detail string) {
		st := CheckFail
		switch {
		case skip:
			st, detail = CheckSkipped, ""
		case pass:
			st, detail = CheckPass, ""
		default:
			c.Passed = false
		}
		c.Checks = append(c.Checks, CheckResult{Key: key, Status: st, Detail: detail})
	}
	unknown := d.State == VolumeUnknown
	set("engine-reachable", !unknown, false, d.Error)
	missing := unknown || d.State == VolumeMissing
	set("root-present", d.State != VolumeMissing, unknown, "the root is gone")
	identity := "bound to " + d.IdentityID + ", found " + strconv.Quote(d.FoundIdentityID)
	if d.IdentityState == engineapi.IdentityUnbound {
		identity = "the root was never validated (no identity marker): it records, but a swapped disk cannot be told until " +
			"POST /api/v2/recording/disk/validate-root binds it"
	}
	set("identity-verified", d.IdentityState == engineapi.IdentityVerified || d.IdentityState == VolumeReadOnly, missing, identity)
	// The engine tries a write only on the bound disk (or an unbound root).
	set("writable", d.IdentityState != VolumeReadOnly, missing || d.IdentityState == VolumeMismatch, "no file can be created in the root")
	noSpace := missing || d.IdentityState != engineapi.IdentityVerified && d.IdentityState != engineapi.IdentityUnbound
	set("above-full", d.FullBytes == 0 || d.FreeBytes >= d.FullBytes, noSpace,
		strconv.FormatInt(d.FreeBytes, 10)+" bytes free, full below "+strconv.FormatInt(d.FullBytes, 10))
	set("above-low-space", d.LowSpaceBytes == 0 || d.FreeBytes >= d.LowSpaceBytes, noSpace,
		strconv.FormatInt(d.FreeBytes, 10)+" bytes free, low below "+strconv.FormatInt(d.LowSpaceBytes, 10))
	return c
}

// Whether an engine's guard lets new files start on a root.
const (
	WritingActive  = "Active"
	WritingPaused  = "Paused"
	WritingUnknown = "Unknown"
)

// DiskGuard is a disk check with the engine guard's verdict: writing is
// Paused (no new file starts; open ones finish) while the volume is Full,
// another disk, missing or read-only, and Active again by itself once the
// check passes those items.
type DiskGuard struct {
	DiskCheck
	Writing string `json:"writing"`
}

// GuardDisks runs a disk check (the engine applies retention and its
// guard as it reads the volume) and says where writing is paused.
func (s *Service) GuardDisks(ctx context.Context) ([]DiskGuard, error) {
	checks, err := s.CheckDisks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DiskGuard, 0, len(checks))
	for _, c := range checks {
		out = append(out, DiskGuard{DiskCheck: c, Writing: writingOf(c.State)})
	}
	return out, nil
}

func writingOf(state string) string {
	switch state {
	case VolumeNormal, VolumeLowSpace:
		return WritingActive
	case VolumeUnknown:
		return WritingUnknown
	}
	return WritingPaused
}
