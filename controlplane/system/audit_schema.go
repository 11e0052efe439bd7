package system

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// SchemaAudit describes the local SQLite schema: tables with columns and row
// counts, indexes, and (on request) their DDL.
func (s *Service) SchemaAudit(ctx context.Context, includeDDL bool, maxDDL int) (contract.DatabaseSchemaAudit, error) {
	out := contract.DatabaseSchemaAudit{Engine: "sqlite", SchemaVersion: sqlitefsm.SchemaVersion, Objects: []contract.SchemaObject{}}
	dbSize, walSize := s.d.Node.State().FileSizes()
	out.SizeBytes = dbSize + walSize
	schema, err := s.d.Node.State().Inspect(ctx)
	if err != nil {
		return out, err
	}
	out.PageSizeBytes, out.Integrity = schema.PageSize, schema.Integrity
	for _, so := range schema.Objects {
		o := contract.SchemaObject{Name: so.Name, Type: contract.SchemaObjectType(so.Type), TableName: so.Table, RowCount: so.RowCount,
			Columns: []contract.SchemaColumn{}}
		for _, c := range so.Columns {
			o.Columns = append(o.Columns, contract.SchemaColumn{Name: c.Name, Type: c.Type, NotNull: c.NotNull, PrimaryKey: c.PrimaryKey})
		}
		if includeDDL {
			ddl := so.DDL
			if len(ddl) > maxDDL {
				ddl, o.DdlTruncated = ddl[:maxDDL], true
			}
			o.Ddl = &ddl
		}
		out.Objects = append(out.Objects, o)
	}
	return out, nil
}
