package storeaudit

import (
	"context"

	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// Schema describes this node's database: the backend's own description
// (tables with columns and row counts, indexes, their DDL) with its size
// and schema version.
type Schema struct {
	Engine        string
	SchemaVersion int32
	// SizeBytes counts the database file and its write-ahead log.
	SizeBytes int64
	sqlitefsm.Schema
}

// Schema reads this node's database schema.
func (a *Auditor) Schema(ctx context.Context) (Schema, error) {
	dbSize, walSize := a.node.State().FileSizes()
	out := Schema{Engine: "sqlite", SchemaVersion: sqlitefsm.SchemaVersion, SizeBytes: dbSize + walSize}
	var err error
	out.Schema, err = a.node.State().Inspect(ctx)
	return out, err
}
