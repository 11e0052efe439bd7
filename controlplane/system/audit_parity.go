package system

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/api/contract"
)

// ParityAudit compares the members of the cluster: reachability, binary and
// schema versions, and the state hash chain at the newest revision every
// member has applied, which proves they hold the same replicated state.
func (s *Service) ParityAudit(ctx context.Context, p contract.GetParityAuditParams) (contract.ParityAuditReport, error) {
	id, err := s.checkCluster(ctx, p.ClusterId)
	if err != nil {
		return contract.ParityAuditReport{}, err
	}
	members, err := s.d.Node.Members(ctx)
	if err != nil {
		return contract.ParityAuditReport{}, err
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
	rep := contract.ParityAuditReport{ClusterId: id, GeneratedAt: time.Now().UTC(), ComparedRevision: common, Passed: true}
	var checks []contract.AuditCheck
	add := func(c contract.AuditCheck) {
		if !c.Passed && c.Severity == contract.AuditCheckSeverityError {
			rep.Passed = false
		}
		checks = append(checks, c)
	}
	var details []contract.ParityMemberDetail
	refVersion, refSchema, refHash := "", 0, ""
	for _, v := range views {
		nid := v.NodeID
		d := contract.ParityMemberDetail{NodeId: nid, Reachable: v.Reachable}
		if !v.Reachable {
			add(
				contract.AuditCheck{
					Name:     "member-reachable",
					NodeId:   &nid,
					Passed:   false,
					Severity: contract.AuditCheckSeverityError,
					Message:  fmt.Sprintf("not reachable: %v", v.Err),
				},
			)
			details = append(details, d)
			continue
		}
		st := v.Status
		d.Version, d.SchemaVersion, d.AppliedRevision, d.StateHash = st.Version, int32(st.SchemaVersion), st.Revision, st.HashAtRevision
		add(contract.AuditCheck{Name: "member-reachable", NodeId: &nid, Passed: true, Severity: contract.AuditCheckSeverityInfo, Message: "reachable over the internal link"})
		if refVersion == "" {
			refVersion, refSchema, refHash = st.Version, st.SchemaVersion, st.HashAtRevision
		}
		add(contract.AuditCheck{Name: "binary-version", NodeId: &nid, Passed: st.Version == refVersion, Severity: sev(st.Version == refVersion, contract.AuditCheckSeverityWarning),
			Message: fmt.Sprintf("version %s (first member: %s)", st.Version, refVersion)})
		add(
			contract.AuditCheck{
				Name:     "schema-version",
				NodeId:   &nid,
				Passed:   st.SchemaVersion == refSchema,
				Severity: sev(st.SchemaVersion == refSchema, contract.AuditCheckSeverityError),
				Message:  fmt.Sprintf("store schema %d (first member: %d)", st.SchemaVersion, refSchema),
			},
		)
		switch {
		case common == 0:
			add(contract.AuditCheck{Name: "state-hash", NodeId: &nid, Passed: true, Severity: contract.AuditCheckSeverityInfo, Message: "no writes yet; nothing to compare"})
		case st.HashAtRevision == "":
			add(contract.AuditCheck{Name: "state-hash", NodeId: &nid, Passed: false, Severity: contract.AuditCheckSeverityWarning,
				Message: fmt.Sprintf("hash at revision %d is no longer retained here (compacted up to %d)", common, st.CompactRevision)})
		default:
			ok := st.HashAtRevision == refHash
			add(contract.AuditCheck{Name: "state-hash", NodeId: &nid, Passed: ok, Severity: sev(ok, contract.AuditCheckSeverityError),
				Message: fmt.Sprintf("state hash at revision %d is %s", common, short(st.HashAtRevision))})
		}
		if v.Self && p.CheckDatabase != nil && *p.CheckDatabase {
			integrity := s.quickCheck(ctx)
			d.DatabaseIntegrity = integrity
			add(contract.AuditCheck{Name: "database-integrity", NodeId: &nid, Passed: integrity == "ok", Severity: sev(integrity == "ok", contract.AuditCheckSeverityError),
				Message: "PRAGMA quick_check on this node: " + integrity})
		}
		details = append(details, d)
	}
	for _, c := range checks {
		if c.Passed && (p.IncludePassed != nil && !*p.IncludePassed) {
			continue
		}
		rep.Checks = append(rep.Checks, c)
	}
	if rep.Checks == nil {
		rep.Checks = []contract.AuditCheck{}
	}
	if p.IncludeDetails != nil && *p.IncludeDetails {
		rep.Members = &details
	}
	return rep, nil
}

func sev(ok bool, failed contract.AuditCheckSeverity) contract.AuditCheckSeverity {
	if ok {
		return contract.AuditCheckSeverityInfo
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
