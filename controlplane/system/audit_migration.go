package system

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// MigrationAudit checks that every schema migration is applied, that every
// index table matches its kv rows, and lists residues: keys under prefixes
// this version does not own (left behind by removed features).
func (s *Service) MigrationAudit(ctx context.Context, p contract.GetMigrationAuditParams) (contract.MigrationAuditReport, error) {
	id, err := s.checkCluster(ctx, p.ClusterId)
	if err != nil {
		return contract.MigrationAuditReport{}, err
	}
	sample := 10
	if p.SampleSize != nil {
		sample = int(*p.SampleSize)
	}
	rep := contract.MigrationAuditReport{ClusterId: id, GeneratedAt: time.Now().UTC(), ExpectedSchemaVersion: sqlitefsm.SchemaVersion, Passed: true}
	var checks []contract.AuditCheck
	applied, indexes, err := s.d.Node.State().Migrations(ctx)
	if err != nil {
		return rep, err
	}
	rep.SchemaVersion = applied
	ok := applied == sqlitefsm.SchemaVersion
	checks = append(checks, contract.AuditCheck{Name: "schema-migrations", Passed: ok, Severity: sev(ok, contract.AuditCheckSeverityError),
		Message: fmt.Sprintf("applied schema version %d, this binary expects %d", applied, sqlitefsm.SchemaVersion)})
	for _, ix := range indexes {
		ok := ix.Missing == 0 && ix.Stale == 0
		checks = append(checks, contract.AuditCheck{Name: "index-" + ix.Name, Passed: ok, Severity: sev(ok, contract.AuditCheckSeverityError),
			Message: fmt.Sprintf("%d records without index row, %d stale or orphaned index rows", ix.Missing, ix.Stale)})
	}
	groups, err := s.residues(ctx, p.IncludeSamples != nil && *p.IncludeSamples, sample)
	if err != nil {
		return rep, err
	}
	rep.Residues = groups
	checks = append(checks, contract.AuditCheck{Name: "removed-protocol-residues", Passed: len(groups) == 0, Severity: sev(len(groups) == 0, contract.AuditCheckSeverityWarning),
		Message: fmt.Sprintf("%d prefix group(s) of keys no current feature owns", len(groups))})
	for _, c := range checks {
		if !c.Passed && c.Severity == contract.AuditCheckSeverityError {
			rep.Passed = false
		}
		if c.Passed && p.IncludePassed != nil && !*p.IncludePassed {
			continue
		}
		rep.Checks = append(rep.Checks, c)
	}
	if rep.Checks == nil {
		rep.Checks = []contract.AuditCheck{}
	}
	return rep, nil
}

// residuePrefix groups a key by its first two path segments.
func residuePrefix(key string) string {
	parts := strings.SplitN(strings.TrimPrefix(key, "/"), "/", 3)
	if len(parts) >= 2 {
		return "/" + parts[0] + "/" + parts[1] + "/"
	}
	return "/" + parts[0]
}

func (s *Service) owned(key string) bool {
	for _, p := range s.d.OwnedPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func (s *Service) residues(ctx context.Context, withSamples bool, sample int) ([]contract.ResidueGroup, error) {
	byPrefix := map[string]*contract.ResidueGroup{}
	err := s.d.Node.State().EachKey(ctx, func(k string) {
		if s.owned(k) {
			return
		}
		p := residuePrefix(k)
		g := byPrefix[p]
		if g == nil {
			g = &contract.ResidueGroup{Prefix: p}
			if withSamples {
				g.SampleKeys = &[]string{}
			}
			byPrefix[p] = g
		}
		g.KeyCount++
		if withSamples && len(*g.SampleKeys) < sample {
			*g.SampleKeys = append(*g.SampleKeys, k)
		}
	})
	out := []contract.ResidueGroup{}
	for _, g := range byPrefix {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out, err
}

// CleanupResidues deletes (or, in a dry run, counts) the keys of residue
// prefixes the audit reports. A prefix the audit does not report is refused,
// so owned data can never be removed this way.
func (s *Service) CleanupResidues(ctx context.Context, req contract.RemovedProtocolResidueCleanupRequest) (contract.RemovedProtocolResidueCleanupResult, error) {
	dry := req.DryRun == nil || *req.DryRun
	groups, err := s.residues(ctx, false, 0)
	if err != nil {
		return contract.RemovedProtocolResidueCleanupResult{}, err
	}
	known := map[string]contract.ResidueGroup{}
	for _, g := range groups {
		known[g.Prefix] = g
	}
	res := contract.RemovedProtocolResidueCleanupResult{DryRun: dry, Prefixes: []contract.ResidueGroup{}, Revision: s.d.Node.Revision()}
	var ops []store.Op
	for _, p := range req.Prefixes {
		g, ok := known[p]
		if !ok {
			return res, fmt.Errorf("%w: %q", ErrNotResidue, p)
		}
		res.Prefixes = append(res.Prefixes, g)
		res.DeletedKeys += g.KeyCount
		ops = append(ops, store.DeletePrefix(p))
	}
	if dry {
		return res, nil
	}
	resp, err := s.d.Node.Txn(ctx, store.TxnRequest{Then: ops})
	if err != nil {
		return res, err
	}
	res.DeletedKeys = 0
	for _, r := range resp.Responses {
		res.DeletedKeys += r.Deleted
	}
	res.Revision = resp.Header.Revision
	return res, nil
}

func sev(ok bool, failed contract.AuditCheckSeverity) contract.AuditCheckSeverity {
	if ok {
		return contract.AuditCheckSeverityInfo
	}
	return failed
}
