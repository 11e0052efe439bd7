package nodecommand

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
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
			where = append(where, col+" = ?")
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
	eq("i.node_id", f.NodeID)
	eq(field("$.engineNodeId"), f.EngineNodeID)
	eq("i.status", f.Status)
	eq(field("$.commandType"), f.CommandType)
	eq(field("$.requestedBy"), f.RequestedBy)
	if f.LocalOnly {
		where = append(where, "("+field("$.createdVia")+" = ? OR "+field("$.dispatchedVia")+" = ?)")
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
		for _, col := range []string{"i.key", "i.node_id", field("$.commandType"), field("$.requestedBy"), field("$.reason"), field("$.error.message")} {
			or = append(or, col+` LIKE ? ESCAPE '\'`)
			args = append(args, like)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	return where, args, nil
}

// from is the FROM clause of the listings: the index joined with the
// records its conditions may read. CROSS JOIN keeps SQLite's planner from
// scanning kv first, where json_extract would meet values of other kinds
// that are not JSON (the statistics query with a filter on a record field
// failed with "malformed JSON").
const from = " FROM idx_node_commands i CROSS JOIN kv ON kv.key = i.key"

func whereClause(where []string) string {
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ")
}

// List returns one page of commands, newest first, and the total.
func (s *Service) List(ctx context.Context, f Filter, page, size int) ([]Record, int64, error) {
	where, args, err := s.where(f)
	if err != nil {
		return nil, 0, err
	}
	cond := whereClause(where)
	var out []Record
	var total int64
	err = s.Reader.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		if err := tx.QueryRowContext(ctx, "SELECT count(*)"+from+cond, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT kv.value%s%s ORDER BY i.created_ms DESC, i.key DESC LIMIT %d OFFSET %d",
			from, cond, size, (page-1)*size), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			var r Record
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, total, err
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
	cond := whereClause(where)
	st := Stats{ByStatus: map[string]int64{}, ByCommandType: map[string]int64{}}
	for _, status := range Statuses {
		st.ByStatus[status] = 0
	}
	now := s.now().UnixMilli()
	err = s.Reader.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		for col, m := range map[string]map[string]int64{"i.status": st.ByStatus, field("$.commandType"): st.ByCommandType} {
			rows, err := tx.QueryContext(ctx, "SELECT "+col+", count(*)"+from+cond+" GROUP BY 1", args...)
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
				if col == "i.status" {
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
		finished := field("$.finishedAtMs")
		if err := tx.QueryRowContext(ctx, "SELECT avg("+finished+" - i.created_ms), max("+finished+" - i.created_ms)"+from+cond+
			andWord(cond)+finished+" > 0", args...).Scan(&avg, &mx); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT min(i.created_ms)"+from+cond+andWord(cond)+"i.status = '"+Pending+"'", args...).Scan(&oldest); err != nil {
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
