package nodecommand

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// Filter selects commands; zero values do not filter. These are the
// contract's filters of the command list and its statistics.
type Filter struct {
	NodeID, EngineNodeID, Status, CommandType, RequestedBy string
	// LocalOnly keeps commands created or handed out by this control node.
	LocalOnly  bool
	From, To   *time.Time
	SinceHours int
	Keyword    string
}

func (s *Service) where(f Filter) ([]string, []any, error) {
	var where []string
	var args []any
	eq := func(col, v string) {
		if v != "" {
			where = append(where, "i."+col+" = ?")
			args = append(args, v)
		}
	}
	if f.Status != "" {
		known := false
		for _, st := range Statuses {
			known = known || st == f.Status
		}
		if !known {
			return nil, nil, fmt.Errorf("%w: status must be one of %s", ErrInvalid, strings.Join(Statuses, ", "))
		}
	}
	eq("node_id", f.NodeID)
	eq("engine_node_id", f.EngineNodeID)
	eq("status", f.Status)
	eq("command_type", f.CommandType)
	eq("requested_by", f.RequestedBy)
	if f.LocalOnly {
		where = append(where, "(i.created_via = ? OR i.dispatched_via = ?)")
		args = append(args, s.LocalNodeID, s.LocalNodeID)
	}
	if f.From != nil {
		where = append(where, "i.created_ms >= ?")
		args = append(args, f.From.UnixMilli())
	}
	if f.To != nil {
		where = append(where, "i.created_ms < ?")
		args = append(args, f.To.UnixMilli())
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		return nil, nil, fmt.Errorf("%w: from must be before to", ErrInvalid)
	}
	if f.SinceHours < 0 || f.SinceHours > 24*366 {
		return nil, nil, fmt.Errorf("%w: sinceHours must be within 0..8784", ErrInvalid)
	}
	if f.SinceHours > 0 {
		where = append(where, "i.created_ms >= ?")
		args = append(args, s.now().Add(-time.Duration(f.SinceHours)*time.Hour).UnixMilli())
	}
	if kw := strings.TrimSpace(f.Keyword); kw != "" {
		if len(kw) > 128 {
			return nil, nil, fmt.Errorf("%w: keyword must be at most 128 characters", ErrInvalid)
		}
		like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(kw) + "%"
		var or []string
		for _, col := range []string{"i.key", "i.node_id", "i.command_type", "i.requested_by", "i.reason", "i.error_message"} {
			or = append(or, col+` LIKE ? ESCAPE '\'`)
			args = append(args, like)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	return where, args, nil
}

// List returns one page of commands, newest first, and the total.
func (s *Service) List(ctx context.Context, f Filter, page, size int) ([]Record, int64, error) {
	where, args, err := s.where(f)
	if err != nil {
		return nil, 0, err
	}
	return sqlitefsm.IndexPage[Record](ctx, s.Reader, "idx_node_commands", where, args, "i.created_ms DESC, i.key DESC", page, size)
}

// Stats are counts over the commands a filter selects.
type Stats struct {
	Total         int64
	ByStatus      map[string]int64
	ByCommandType map[string]int64
	// AvgDurationMs and MaxDurationMs cover finished commands, from
	// creation to the end.
	AvgDurationMs float64
	MaxDurationMs int64
	// OldestPendingMs is the age of the oldest command not handed out yet.
	OldestPendingMs int64
}

// Stats counts the selected commands by status and type.
func (s *Service) Stats(ctx context.Context, f Filter) (Stats, error) {
	where, args, err := s.where(f)
	if err != nil {
		return Stats{}, err
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	st := Stats{ByStatus: map[string]int64{}, ByCommandType: map[string]int64{}}
	for _, status := range Statuses {
		st.ByStatus[status] = 0
	}
	now := s.now().UnixMilli()
	err = s.Reader.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		for col, m := range map[string]map[string]int64{"status": st.ByStatus, "command_type": st.ByCommandType} {
			rows, err := tx.QueryContext(ctx, "SELECT i."+col+", count(*) FROM idx_node_commands i"+cond+" GROUP BY i."+col, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var k sql.NullString
				var n int64
				if err := rows.Scan(&k, &n); err != nil {
					rows.Close()
					return err
				}
				m[k.String] = n
				if col == "status" {
					st.Total += n
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		var avg sql.NullFloat64
		var mx, oldest sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT avg(i.finished_ms - i.created_ms), max(i.finished_ms - i.created_ms) FROM idx_node_commands i"+cond+
			andWord(cond)+"i.finished_ms > 0", args...).Scan(&avg, &mx); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT min(i.created_ms) FROM idx_node_commands i"+cond+andWord(cond)+"i.status = '"+Pending+"'", args...).Scan(&oldest); err != nil {
			return err
		}
		st.AvgDurationMs, st.MaxDurationMs = avg.Float64, mx.Int64
		if oldest.Valid {
			st.OldestPendingMs = now - oldest.Int64
		}
		return nil
	})
	return st, err
}

func andWord(cond string) string {
	if cond == "" {
		return " WHERE "
	}
	return " AND "
}
