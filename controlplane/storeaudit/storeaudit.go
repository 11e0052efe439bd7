// Package storeaudit is the replicated store's own administration: whether
// every schema migration is applied and every index table matches its
// records, which keys no current feature owns (residues of removed
// features) and their removal, and a description of the local database's
// schema. It reads the embedded backend's reports, and writes through the
// store only.
package storeaudit

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// ErrNotResidue: a cleanup named a prefix the audit does not report.
var ErrNotResidue = fault.New(fault.Conflict, "conflict", "prefix is not a residue prefix")

// Auditor audits one node's store.
type Auditor struct {
	node *raftnode.Node
	// owned are the key prefixes this version owns; any other key is a
	// residue of a removed feature or protocol.
	owned []string
}

// New returns an auditor of node's store, owned naming the prefixes this
// version writes.
func New(node *raftnode.Node, owned []string) *Auditor { return &Auditor{node: node, owned: owned} }

// ResidueGroup is the keys under one prefix no feature owns.
type ResidueGroup struct {
	Prefix   string
	KeyCount int64
	// SampleKeys, when asked for, are some of its keys.
	SampleKeys []string
}

// Migration is the migration audit's report; Checks holds every check.
type Migration struct {
	ClusterID             string
	GeneratedAt           time.Time
	SchemaVersion         int32
	ExpectedSchemaVersion int32
	Passed                bool
	Checks                []cluster.AuditCheck
	Residues              []ResidueGroup
}

// MigrationOptions choose the cluster ("": this one) and how many sample
// keys each residue group lists (0: none).
type MigrationOptions struct {
	ClusterID string
	Samples   int
}

// Migration checks that every schema migration is applied, that every
// index table matches its kv rows, and lists residues: keys under prefixes
// this version does not own (left behind by removed features).
func (a *Auditor) Migration(ctx context.Context, o MigrationOptions) (Migration, error) {
	id := cluster.ID(ctx, a.node)
	if o.ClusterID != "" && o.ClusterID != id {
		return Migration{}, fmt.Errorf("%w: %q", cluster.ErrUnknownCluster, o.ClusterID)
	}
	rep := Migration{ClusterID: id, GeneratedAt: time.Now().UTC(), ExpectedSchemaVersion: sqlitefsm.SchemaVersion, Passed: true}
	add := func(c cluster.AuditCheck) {
		if !c.Passed && c.Severity == cluster.Error {
			rep.Passed = false
		}
		rep.Checks = append(rep.Checks, c)
	}
	applied, indexes, err := a.node.State().Migrations(ctx)
	if err != nil {
		return rep, err
	}
	rep.SchemaVersion = applied
	ok := applied == sqlitefsm.SchemaVersion
	add(cluster.AuditCheck{Name: "schema-migrations", Passed: ok, Severity: severity(ok, cluster.Error),
		Message: fmt.Sprintf("applied schema version %d, this binary expects %d", applied, sqlitefsm.SchemaVersion)})
	for _, ix := range indexes {
		ok := ix.Missing == 0 && ix.Stale == 0
		add(cluster.AuditCheck{Name: "index-" + ix.Name, Passed: ok, Severity: severity(ok, cluster.Error),
			Message: fmt.Sprintf("%d records without index row, %d stale or orphaned index rows", ix.Missing, ix.Stale)})
	}
	if rep.Residues, err = a.residues(ctx, o.Samples); err != nil {
		return rep, err
	}
	none := len(rep.Residues) == 0
	add(cluster.AuditCheck{Name: "removed-protocol-residues", Passed: none, Severity: severity(none, cluster.Warning),
		Message: fmt.Sprintf("%d prefix group(s) of keys no current feature owns", len(rep.Residues))})
	return rep, nil
}

func severity(ok bool, failed cluster.Severity) cluster.Severity {
	if ok {
		return cluster.Info
	}
	return failed
}

// residuePrefix groups a key by its first two path segments.
func residuePrefix(key string) string {
	parts := strings.SplitN(strings.TrimPrefix(key, "/"), "/", 3)
	if len(parts) >= 2 {
		return "/" + parts[0] + "/" + parts[1] + "/"
	}
	return "/" + parts[0]
}

func (a *Auditor) isOwned(key string) bool {
	for _, p := range a.owned {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func (a *Auditor) residues(ctx context.Context, samples int) ([]ResidueGroup, error) {
	byPrefix := map[string]*ResidueGroup{}
	err := a.node.State().EachKey(ctx, func(k string) {
		if a.isOwned(k) {
			return
		}
		p := residuePrefix(k)
		g := byPrefix[p]
		if g == nil {
			g = &ResidueGroup{Prefix: p}
			byPrefix[p] = g
		}
		g.KeyCount++
		if len(g.SampleKeys) < samples {
			g.SampleKeys = append(g.SampleKeys, k)
		}
	})
	out := []ResidueGroup{}
	for _, g := range byPrefix {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out, err
}

// Cleanup is what a residue cleanup removed (or, dry, would remove).
type Cleanup struct {
	DryRun      bool
	Prefixes    []ResidueGroup
	DeletedKeys int64
	Revision    int64
}

// CleanupResidues deletes (or, in a dry run, counts) the keys of residue
// prefixes the audit reports. A prefix the audit does not report is refused,
// so owned data can never be removed this way.
func (a *Auditor) CleanupResidues(ctx context.Context, prefixes []string, dryRun bool) (Cleanup, error) {
	groups, err := a.residues(ctx, 0)
	if err != nil {
		return Cleanup{}, err
	}
	known := map[string]ResidueGroup{}
	for _, g := range groups {
		known[g.Prefix] = g
	}
	res := Cleanup{DryRun: dryRun, Prefixes: []ResidueGroup{}, Revision: a.node.Revision()}
	var ops []store.Op
	for _, p := range prefixes {
		g, ok := known[p]
		if !ok {
			return res, fmt.Errorf("%w: %q", ErrNotResidue, p)
		}
		res.Prefixes = append(res.Prefixes, g)
		res.DeletedKeys += g.KeyCount
		ops = append(ops, store.DeletePrefix(p))
	}
	if dryRun {
		return res, nil
	}
	resp, err := a.node.Txn(ctx, store.TxnRequest{Then: ops})
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
