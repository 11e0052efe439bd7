package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Group is a named set of channels. A channel joining a group compares
// the group's mod revision in its Txn without writing it, so creates in one
// group never contend with each other. Deleting first marks the group
// (Deleting), which changes that revision: a create that read the group
// before the mark fails its compare, one that reads it after sees the mark
// and refuses. Only then are the members counted, so a delete and a create
// in the same group can never both succeed.
type Group struct {
	GroupKey    GroupKey  `json:"groupKey"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Deleting    bool      `json:"deleting,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	CreatedBy   string    `json:"createdBy"`
	UpdatedAt   time.Time `json:"updatedAt"`
	UpdatedBy   string    `json:"updatedBy"`
	// ChannelCount is counted from the channel index on read, not stored.
	ChannelCount int `json:"-"`
}

func checkGroup(k GroupKey, name, description string) error {
	if !groupRe.MatchString(string(k)) {
		return fmt.Errorf("%w: groupKey must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalid)
	}
	if err := checkText("name", name, 1, 128); err != nil {
		return err
	}
	return checkText("description", description, 0, 1024)
}

func (s *Service) getGroup(ctx context.Context, k GroupKey) (*Group, int64, error) {
	if !groupRe.MatchString(string(k)) {
		return nil, 0, fmt.Errorf("%w: %q", ErrGroupNotFound, k)
	}
	kv, _, err := store.Get(ctx, s.Store, groupKey(k), store.Local)
	if err != nil {
		return nil, 0, err
	}
	if kv == nil {
		return nil, 0, fmt.Errorf("%w: %q", ErrGroupNotFound, k)
	}
	g, err := store.Decode[Group](kv)
	if err != nil {
		return nil, 0, err
	}
	return &g, kv.ModRevision, nil
}

// Group reads one group with its channel count.
func (s *Service) Group(ctx context.Context, k GroupKey) (*Group, error) {
	g, _, err := s.getGroup(ctx, k)
	if err != nil {
		return nil, err
	}
	counts, err := s.groupCounts(ctx)
	g.ChannelCount = counts[k]
	return g, err
}

// groupCounts counts channels per group from the channel index.
func (s *Service) groupCounts(ctx context.Context) (map[GroupKey]int, error) {
	counts := map[GroupKey]int{}
	err := s.Reader.View(ctx, func(v query.View) error {
		by, err := v.CountBy(Index.Name, "group_key", query.Ne("group_key", ""))
		for k, n := range by {
			counts[GroupKey(k)] = int(n)
		}
		return err
	})
	return counts, err
}

// CreateGroup stores a new group; the key must be free.
func (s *Service) CreateGroup(ctx context.Context, a Actor, k GroupKey, name, description string) (*Group, error) {
	if err := checkGroup(k, name, description); err != nil {
		return nil, err
	}
	now := s.now()
	g := &Group{GroupKey: k, Name: name, Description: description, CreatedAt: now, CreatedBy: who(a), UpdatedAt: now, UpdatedBy: who(a)}
	val, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(groupKey(k))}, Then: []store.Op{store.Put(groupKey(k), val)}})
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: %q", ErrDuplicateGroup, k)
	}
	return g, nil
}

// UpdateGroup changes a group's name and description (nil keeps a value).
func (s *Service) UpdateGroup(ctx context.Context, a Actor, k GroupKey, name, description *string) (*Group, error) {
	if !groupRe.MatchString(string(k)) {
		return nil, fmt.Errorf("%w: %q", ErrGroupNotFound, k)
	}
	var g Group
	_, err := store.Update(ctx, s.Store, groupKey(k), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrGroupNotFound, k)
		}
		cur, err := store.Decode[Group](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		g = cur
		if name != nil {
			g.Name = *name
		}
		g.Deleting = false // an update revives a group whose deletion was interrupted
		if description != nil {
			g.Description = *description
		}
		if err := checkGroup(k, g.Name, g.Description); err != nil {
			return nil, nil, nil, err
		}
		g.UpdatedAt, g.UpdatedBy = s.now(), who(a)
		val, err := json.Marshal(g)
		return val, nil, nil, err
	})
	if errors.Is(err, store.ErrContended) {
		return nil, fmt.Errorf("%w: %w", ErrContended, err)
	}
	if err != nil {
		return nil, err
	}
	counts, err := s.groupCounts(ctx)
	g.ChannelCount = counts[k]
	return &g, err
}

// DeleteGroup removes an empty group: mark it, count its channels at a
// revision after the mark, then delete it (or take the mark back).
func (s *Service) DeleteGroup(ctx context.Context, a Actor, k GroupKey) error {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		g, rev, err := s.getGroup(ctx, k)
		if err != nil {
			return err
		}
		g.Deleting, g.UpdatedAt, g.UpdatedBy = true, s.now(), who(a)
		val, err := json.Marshal(g)
		if err != nil {
			return err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(groupKey(k), rev)}, Then: []store.Op{store.Put(groupKey(k), val)}})
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			if err := s.settle(ctx, resp.Header.Revision, attempt); err != nil {
				return err
			}
			continue
		}
		marked := resp.Header.Revision
		// This node applied the mark, so every channel that joined before
		// it is in the local index now.
		counts, err := s.groupCounts(ctx)
		if err != nil {
			return err
		}
		if n := counts[k]; n > 0 {
			g.Deleting = false
			val, _ := json.Marshal(g)
			s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(groupKey(k), marked)}, Then: []store.Op{store.Put(groupKey(k), val)}})
			return fmt.Errorf("%w: %q has %d channel(s); move or delete them first", ErrGroupNotEmpty, k, n)
		}
		resp, err = s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(groupKey(k), marked)}, Then: []store.Op{store.Delete(groupKey(k))}})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			return nil
		}
		if err := s.settle(ctx, resp.Header.Revision, attempt); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: group %s", ErrContended, k)
}

// Groups lists groups in key order, optionally those whose key or name
// contains keyword, one page at a time. Groups are few, so this reads them
// all.
func (s *Service) Groups(ctx context.Context, keyword string, page, size int) ([]Group, int64, error) {
	resp, err := s.Store.Range(ctx, GroupPrefix, store.RangeOptions{End: store.PrefixEnd(GroupPrefix)})
	if err != nil {
		return nil, 0, err
	}
	counts, err := s.groupCounts(ctx)
	if err != nil {
		return nil, 0, err
	}
	kw := strings.ToLower(strings.TrimSpace(keyword))
	var all []Group
	for _, kv := range resp.KVs {
		g, err := store.Decode[Group](kv)
		if err != nil {
			return nil, 0, err
		}
		g.ChannelCount = counts[g.GroupKey]
		if kw == "" || strings.Contains(strings.ToLower(string(g.GroupKey)), kw) || strings.Contains(strings.ToLower(g.Name), kw) {
			all = append(all, g)
		}
	}
	page, size = max(page, 1), pageSize(size)
	from := min((page-1)*size, len(all))
	return all[from:min(from+size, len(all))], int64(len(all)), nil
}
