package sqlitefsm

import (
	"context"
	"fmt"
	"strings"

	"github.com/svcplatform/svc/controlplane/store"
)

// watchWindow bounds how many revisions one history query covers, so a
// watcher far behind catches up in bounded steps.
const watchWindow = 512

// Watch streams the changes of keys under prefix from revision from
// (0 = the next revision). History at or below the compaction point is gone;
// asking for it yields store.ErrCompacted.
func (s *State) Watch(ctx context.Context, prefix string, from int64) <-chan store.WatchResponse {
	out := make(chan store.WatchResponse, 16)
	s.watchers.Add(1)
	// "From now" is the revision at the call, not whenever the goroutine
	// first runs: a change applied in between must not be missed.
	next := from
	if next <= 0 {
		next = s.Revision() + 1
	}
	go func() {
		defer close(out)
		defer s.watchers.Add(-1)
		end := store.PrefixEnd(prefix)
		// A prefix inside one area can tell from the area's revision that
		// nothing under it changed, and skip reading the history.
		oneArea := strings.Count(area(prefix), "/") == 3 && strings.HasPrefix(prefix, area(prefix))
		for {
			ch := s.changed()
			if comp := s.CompactRevision(); next <= comp {
				select {
				case out <- store.WatchResponse{CompactRevision: comp, Err: fmt.Errorf("%w: revision %d (compacted up to %d)", store.ErrCompacted, next, comp)}:
				case <-ctx.Done():
				}
				return
			}
			cur := s.Revision()
			if oneArea && next <= cur && s.AreaRevision(prefix) < next {
				next = cur + 1 // areas are marked before the revision moves
			}
			for next <= cur {
				upto := min(next+watchWindow-1, cur)
				events, err := s.history(ctx, prefix, end, next, upto)
				if err != nil {
					if ctx.Err() == nil {
						select {
						case out <- store.WatchResponse{Err: err}:
						case <-ctx.Done():
						}
					}
					return
				}
				if len(events) > 0 {
					select {
					case out <- store.WatchResponse{Events: events}:
					case <-ctx.Done():
						return
					}
				}
				next = upto + 1
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
