package cluster

import (
	"context"
	"fmt"
	"time"
)

// Severity is how much a failed audit check matters.
type Severity string

const (
	Info    Severity = "info"
	Warning Severity = "warning"
	Error   Severity = "error"
)

// AuditCheck is one check of the parity audit; NodeID names the member
// it is about.
type AuditCheck struct {
	Name     string
	NodeID   string
	Passed   bool
	Severity Severity
	Message  string
}

// ParityMember is what a member reported for the audit.
type ParityMember struct {
	NodeID          string
	Reachable       bool
	Version         string
	SchemaVersion   int
	AppliedRevision int64
	StateHash       string
	// DatabaseIntegrity is this node's own quick check, when asked for.
	DatabaseIntegrity string
}

// Parity is the parity audit's report. Checks holds every check; Passed
// is false when one with severity Error failed.
type Parity struct {
	ClusterID        string
	GeneratedAt      time.Time
	ComparedRevision int64
	Passed           bool
	Checks           []AuditCheck
	Members          []ParityMember
}

// ParityOptions choose the cluster (""; this one) and whether this node
// checks its own database's integrity too.
type ParityOptions struct {
	ClusterID     string
	CheckDatabase bool
}

// Parity compares the members of the cluster: reachability, binary and
// schema versions, and the state hash chain at the newest revision every
// member has applied, which proves they hold the same replicated state.
func (s *Service) Parity(ctx context.Context, o ParityOptions) (Parity, error) {
	id, err := s.check(ctx, o.ClusterID)
	if err != nil {
		return Parity{}, err
	}
	members, err := s.d.Node.Members(ctx)
	if err != nil {
		return Parity{}, err
	}
	// First pass: find the common revision.
	views := s.memberStatuses(ctx, members, 0)
	common := int64(-1)
	for _, v := range views {
		if v.Reachable && (common < 0 || v.Status.Revision < common) {
			common = v.Status.Revision
		}
	}
	if common < 0 {
		common = 0
	}
	if common > 0 {
		views = s.memberStatuses(ctx, members, common)
	}
	rep := Parity{ClusterID: id, GeneratedAt: time.Now().UTC(), ComparedRevision: common, Passed: true}
	add := func(c AuditCheck) {
		if !c.Passed && c.Severity == Error {
			rep.Passed = false
		}
		rep.Checks = append(rep.Checks, c)
	}
	refVersion, refSchema, refHash := "", 0, ""
	for _, v := range views {
		nid := v.NodeID
		d := ParityMember{NodeID: nid, Reachable: v.Reachable}
		if !v.Reachable {
			add(AuditCheck{Name: "member-reachable", NodeID: nid, Passed: false, Severity: Error, Message: fmt.Sprintf("not reachable: %v", v.Err)})
			rep.Members = append(rep.Members, d)
			continue
		}
		st := v.Status
		d.Version, d.SchemaVersion, d.AppliedRevision, d.StateHash = st.Version, st.SchemaVersion, st.Revision, st.HashAtRevision
		add(AuditCheck{Name: "member-reachable", NodeID: nid, Passed: true, Severity: Info, Message: "reachable over the internal link"})
		if refVersion == "" {
			refVersion, refSchema, refHash = st.Version, st.SchemaVersion, st.HashAtRevision
		}
		add(AuditCheck{Name: "binary-version", NodeID: nid, Passed: st.Version == refVersion, Severity: severity(st.Version == refVersion, Warning),
			Message: fmt.Sprintf("version %s (first member: %s)", st.Version, refVersion)})
		add(AuditCheck{Name: "schema-version", NodeID: nid, Passed: st.SchemaVersion == refSchema, Severity: severity(st.SchemaVersion == refSchema, Error),
			Message: fmt.Sprintf("store schema %d (first member: %d)", st.SchemaVersion, refSchema)})
		switch {
		case common == 0:
			add(AuditCheck{Name: "state-hash", NodeID: nid, Passed: true, Severity: Info, Message: "no writes yet; nothing to compare"})
		case st.HashAtRevision == "":
			add(AuditCheck{Name: "state-hash", NodeID: nid, Passed: false, Severity: Warning,
				Message: fmt.Sprintf("hash at revision %d is no longer retained here (compacted up to %d)", common, st.CompactRevision)})
		default:
			ok := st.HashAtRevision == refHash
			add(AuditCheck{Name: "state-hash", NodeID: nid, Passed: ok, Severity: severity(ok, Error),
				Message: fmt.Sprintf("state hash at revision %d is %s", common, short(st.HashAtRevision))})
		}
		if v.Self && o.CheckDatabase {
			integrity := s.quickCheck(ctx)
			d.DatabaseIntegrity = integrity
			add(AuditCheck{Name: "database-integrity", NodeID: nid, Passed: integrity == "ok", Severity: severity(integrity == "ok", Error),
				Message: "PRAGMA quick_check on this node: " + integrity})
		}
		rep.Members = append(rep.Members, d)
	}
	return rep, nil
}

func severity(ok bool, failed Severity) Severity {
	if ok {
		return Info
	}
	return failed
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

func (s *Service) quickCheck(ctx context.Context) string {
	res, err := s.d.Node.State().QuickCheck(ctx)
	if err != nil {
		return "error: " + err.Error()
	}
	return res
}
