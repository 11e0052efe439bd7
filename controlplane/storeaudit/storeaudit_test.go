package storeaudit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/controlplane/storeaudit"
)

// Keys under no owned prefix are residues, grouped by their first two
// segments; a dry cleanup only counts them, a prefix the audit does not
// report is refused, and a real one removes exactly the named groups.
func TestMigrationAuditAndResidueCleanup(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	for _, k := range []string{"/owned/a", "/gone/x/1", "/gone/x/2", "/old"} {
		if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(k, []byte("{}"))}}); err != nil {
			t.Fatal(err)
		}
	}
	a := storeaudit.New(node, []string{"/owned/"})

	if _, err := a.Migration(ctx, storeaudit.MigrationOptions{ClusterID: "another"}); !errors.Is(err, cluster.ErrUnknownCluster) {
		t.Errorf("audit of another cluster: %v", err)
	}
	rep, err := a.Migration(ctx, storeaudit.MigrationOptions{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || rep.SchemaVersion != rep.ExpectedSchemaVersion || len(rep.Residues) != 2 {
		t.Fatalf("audit %+v", rep)
	}
	if g := rep.Residues[0]; g.Prefix != "/gone/x/" || g.KeyCount != 2 || len(g.SampleKeys) != 1 {
		t.Errorf("first group %+v", g)
	}
	if g := rep.Residues[1]; g.Prefix != "/old" || g.KeyCount != 1 {
		t.Errorf("second group %+v", g)
	}
	var residueCheck *cluster.AuditCheck
	for i, c := range rep.Checks {
		if c.Name == "removed-protocol-residues" {
			residueCheck = &rep.Checks[i]
		} else if !c.Passed {
			t.Errorf("check %+v failed", c)
		}
	}
	if residueCheck == nil || residueCheck.Passed || residueCheck.Severity != cluster.Warning {
		t.Errorf("residue check %+v", residueCheck)
	}

	rev := node.Revision()
	dry, err := a.CleanupResidues(ctx, []string{"/gone/x/"}, true)
	if err != nil || !dry.DryRun || dry.DeletedKeys != 2 || node.Revision() != rev {
		t.Errorf("dry run %+v %v (revision %d -> %d)", dry, err, rev, node.Revision())
	}
	if _, err := a.CleanupResidues(ctx, []string{"/owned/"}, false); !errors.Is(err, storeaudit.ErrNotResidue) {
		t.Errorf("cleanup of an owned prefix: %v", err)
	}
	done, err := a.CleanupResidues(ctx, []string{"/gone/x/"}, false)
	if err != nil || done.DeletedKeys != 2 || done.Revision != node.Revision() {
		t.Errorf("cleanup %+v %v", done, err)
	}
	for k, want := range map[string]bool{"/owned/a": true, "/gone/x/1": false, "/old": true} {
		if kv, _, err := store.Get(ctx, node, k, store.Local); err != nil || (kv != nil) != want {
			t.Errorf("%s present=%v (%v), want %v", k, kv != nil, err, want)
		}
	}
	if rep, _ := a.Migration(ctx, storeaudit.MigrationOptions{}); len(rep.Residues) != 1 || rep.Residues[0].SampleKeys != nil {
		t.Errorf("after the cleanup: %+v", rep.Residues)
	}
}

// The schema names the kv table with its columns and rows.
func TestSchema(t *testing.T) {
	node := storetest.SingleNode(t)
	sc, err := storeaudit.New(node, nil).Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sc.Engine != "sqlite" || sc.SizeBytes <= 0 || sc.PageSize <= 0 || sc.Integrity != "ok" {
		t.Errorf("schema %+v", sc)
	}
	found := false
	for _, o := range sc.Objects {
		if o.Name == "kv" && o.Type == "table" && len(o.Columns) > 0 && o.RowCount != nil && o.DDL != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("no kv table in %+v", sc.Objects)
	}
}
