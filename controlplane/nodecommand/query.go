package nodecommand

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/store/query"
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

func (s *Service) where(f Filter) (query.Where, error) {
	var where query.Where
	if f.Status != "" {
		known := false
		for _, st := range Statuses {
			known = known || st == f.Status
		}
		if !known {
			return nil, fmt.Errorf("%w: %w: status must be one of %s", ErrInvalidQuery, ErrInvalid, strings.Join(Statuses, ", "))
		}
	}
	where.EqIfSet("node_id", f.NodeID)
	where.EqIfSet("engine_node_id", f.EngineNodeID)
	where.EqIfSet("status", f.Status)
	where.EqIfSet("command_type", f.CommandType)
	where.EqIfSet("requested_by", f.RequestedBy)
	if f.LocalOnly {
		where.Add(query.AnyOf(query.Eq("created_via", s.LocalNodeID), query.Eq("dispatched_via", s.LocalNodeID)))
	}
	if f.From != nil {
		where.Add(query.Ge("created_ms", f.From.UnixMilli()))
	}
	if f.To != nil {
		where.Add(query.Lt("created_ms", f.To.UnixMilli()))
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		return nil, fmt.Errorf("%w: %w: from must be before to", ErrInvalidQuery, ErrInvalid)
	}
	if f.SinceHours < 0 || f.SinceHours > 24*366 {
		return nil, fmt.Errorf("%w: %w: sinceHours must be within 0..8784", ErrInvalidQuery, ErrInvalid)
	}
	if f.SinceHours > 0 {
		where.Add(query.Ge("created_ms", s.now().Add(-time.Duration(f.SinceHours)*time.Hour).UnixMilli()))
	}
	if kw := strings.TrimSpace(f.Keyword); kw != "" {
		if len(kw) > 128 {
			return nil, fmt.Errorf("%w: %w: keyword must be at most 128 characters", ErrInvalidQuery, ErrInvalid)
		}
		var anyOf []query.Cond
		for _, col := range []string{query.Key, "node_id", "command_type", "requested_by", "reason", "error_message"} {
			anyOf = append(anyOf, query.Contains(col, kw))
		}
		where.Add(query.AnyOf(anyOf...))
	}
	return where, nil
}

// List returns one page of commands, newest first, and the total.
func (s *Service) List(ctx context.Context, f Filter, page, size int) ([]Record, int64, error) {
	where, err := s.where(f)
	if err != nil {
		return nil, 0, err
	}
	return query.Page(ctx, s.Reader, query.Query{Index: Index.Name, Where: where,
		Order: []query.Order{query.Desc("created_ms"), query.Desc(query.Key)}}, page, size, query.JSON[Record])
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
	where, err := s.where(f)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{ByStatus: map[string]int64{}, ByCommandType: map[string]int64{}}
	for _, status := range Statuses {
		st.ByStatus[status] = 0
	}
	now := s.now().UnixMilli()
	err = s.Reader.View(ctx, func(v query.View) error {
		byStatus, err := v.CountBy(Index.Name, "status", where...)
		if err != nil {
			return err
		}
		for k, n := range byStatus {
			st.ByStatus[k] = n
			st.Total += n
		}
		byType, err := v.CountBy(Index.Name, "command_type", where...)
		if err != nil {
			return err
		}
		maps.Copy(st.ByCommandType, byType)
		if st.AvgDurationMs, st.MaxDurationMs, err = v.Span(Index.Name, "created_ms", "finished_ms", where...); err != nil {
			return err
		}
		oldest, ok, err := v.Min(Index.Name, "created_ms", append(where, query.Eq("status", Pending))...)
		if ok {
			st.OldestPendingMs = now - oldest
		}
		return err
	})
	return st, err
}
