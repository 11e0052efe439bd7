package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// Group is a named set of channels. ChannelCount is kept by every write
// that moves a channel in or out, in the same Txn and with a compare on the
// group's mod revision, so deleting a group and creating a channel in it
// can never both succeed.
type Group struct {
	GroupKey     GroupKey  `json:"groupKey"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	ChannelCount int       `json:"channelCount"`
	CreatedAt    time.Time `json:"createdAt"`
	CreatedBy    string    `json:"createdBy"`
	UpdatedAt    time.Time `json:"updatedAt"`
	UpdatedBy    string    `json:"updatedBy"`
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
	var g Group
	if err := json.Unmarshal(kv.Value, &g); err != nil {
		return nil, 0, fmt.Errorf("stored group %s: %w", k, err)
	}
	return &g, kv.ModRevision, nil
}

// Group reads one group.
func (s *Service) Group(ctx context.Context, k GroupKey) (*Group, error) {
	g, _, err := s.getGroup(ctx, k)
	return g, err
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
		if err := json.Unmarshal(kv.Value, &g); err != nil {
			return nil, nil, nil, err
		}
		if name != nil {
			g.Name = *name
		}
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
		return nil, fmt.Errorf("%w: %v", ErrContended, err)
	}
	if err != nil {
		return nil, err
	}
	return &g, nil
}

// DeleteGroup removes an empty group. The delete compares the group's mod
// revision with the one whose count it read: a channel joining meanwhile
// rewrote the record, so the delete fails and sees the new count.
func (s *Service) DeleteGroup(ctx context.Context, a Actor, k GroupKey) error {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		g, rev, err := s.getGroup(ctx, k)
		if err != nil {
			return err
		}
		if g.ChannelCount > 0 {
			return fmt.Errorf("%w: %q has %d channel(s); move or delete them first", ErrGroupNotEmpty, k, g.ChannelCount)
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(groupKey(k), rev)}, Then: []store.Op{store.Delete(groupKey(k))}})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			return nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
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
	kw := strings.ToLower(strings.TrimSpace(keyword))
	var all []Group
	for _, kv := range resp.KVs {
		var g Group
		if err := json.Unmarshal(kv.Value, &g); err != nil {
			return nil, 0, fmt.Errorf("stored group %s: %w", kv.Key, err)
		}
		if kw == "" || strings.Contains(strings.ToLower(string(g.GroupKey)), kw) || strings.Contains(strings.ToLower(g.Name), kw) {
			all = append(all, g)
		}
	}
	page, size = max(page, 1), pageSize(size)
	from := min((page-1)*size, len(all))
	return all[from:min(from+size, len(all))], int64(len(all)), nil
}
