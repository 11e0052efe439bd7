package system

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// SchemaAudit describes the local SQLite schema: tables with columns and row
// counts, indexes, and (on request) their DDL.
func (s *Service) SchemaAudit(ctx context.Context, includeDDL bool, maxDDL int) (contract.DatabaseSchemaAudit, error) {
	out := contract.DatabaseSchemaAudit{Engine: "sqlite", SchemaVersion: sqlitefsm.SchemaVersion, Objects: []contract.SchemaObject{}}
	dbSize, walSize := s.d.Node.State().FileSizes()
	out.SizeBytes = dbSize + walSize
	err := s.d.Node.State().ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		if err := tx.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&out.PageSizeBytes); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&out.Integrity); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT name, type, tbl_name, coalesce(sql, '') FROM sqlite_schema
			WHERE name NOT LIKE 'sqlite_%' ORDER BY type DESC, name`)
		if err != nil {
			return err
		}
		var objs []contract.SchemaObject
		var ddls []string
		for rows.Next() {
			var o contract.SchemaObject
			var ddl string
			if err := rows.Scan(&o.Name, &o.Type, &o.TableName, &ddl); err != nil {
				rows.Close()
				return err
			}
			objs = append(objs, o)
			ddls = append(ddls, ddl)
		}
		rows.Close()
		for i := range objs {
			o := &objs[i]
			o.Columns = []contract.SchemaColumn{}
			if o.Type == contract.SchemaObjectTypeTable {
				var n int64
				if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM "%s"`, o.Name)).Scan(&n); err != nil {
					return err
				}
				o.RowCount = &n
				cols, err := tx.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, o.Name)
				if err != nil {
					return err
				}
				for cols.Next() {
					var c contract.SchemaColumn
					var pk int
					if err := cols.Scan(&c.Name, &c.Type, &c.NotNull, &pk); err != nil {
						cols.Close()
						return err
					}
					c.PrimaryKey = pk > 0
					o.Columns = append(o.Columns, c)
				}
				cols.Close()
			}
			if includeDDL {
				ddl := ddls[i]
				if len(ddl) > maxDDL {
					ddl, o.DdlTruncated = ddl[:maxDDL], true
				}
				o.Ddl = &ddl
			}
		}
		out.Objects = objs
		return nil
	})
	return out, err
}
