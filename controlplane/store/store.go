// Package store defines the control plane's replicated key-value store in the
// shape of etcd's API: keys carry create and mod revisions and a version, one
// global revision counts committed writes, Txn evaluates compares and runs one
// of two operation lists atomically, and Watch replays changes from any
// retained revision. Domain packages depend only on this package, so the
// embedded raft backend and a later etcd-backed adapter are interchangeable.
package store

import (
	"context"
	"errors"
	"fmt"
)

// KeyValue is one stored key at a revision.
type KeyValue struct {
	Key            string `json:"key"`
	Value          []byte `json:"value,omitempty"`
	CreateRevision int64  `json:"createRevision"`
	ModRevision    int64  `json:"modRevision"`
	Version        int64  `json:"version"`
}

// Header reports the store revision a response was evaluated at.
type Header struct {
	Revision int64 `json:"revision"`
}

// Consistency selects how fresh a read must be.
type Consistency int

const (
	// Local reads this node's applied state (read-your-writes holds for writes
	// answered by this node).
	Local Consistency = iota
	// Linearizable confirms leadership with a quorum and waits until this node
	// has applied everything committed before the read started.
	Linearizable
)

// RangeOptions narrows a Range read.
type RangeOptions struct {
	// End is the exclusive end of the key range; empty means the single key,
	// and "\x00" means every key at or after Key (etcd's convention).
	End string
	// Limit caps the number of returned keys; 0 means no limit.
	Limit int64
	// CountOnly returns only Count.
	CountOnly bool
	// KeysOnly omits values.
	KeysOnly bool
	// Consistency of the read; Local by default.
	Consistency Consistency
}

// RangeResponse is the answer to a Range.
type RangeResponse struct {
	Header Header      `json:"header"`
	KVs    []*KeyValue `json:"kvs,omitempty"`
	Count  int64       `json:"count"`
	More   bool        `json:"more"`
}

// EventType is what happened to a key. Values are append-only.
type EventType int

const (
	EventPut    EventType = 0
	EventDelete EventType = 1
)

// Event is one key change observed by a watcher. For deletes, KV carries the
// key and the deletion revision as ModRevision; PrevKV, when present, is the
// value that was deleted or overwritten.
type Event struct {
	Type   EventType `json:"type"`
	KV     *KeyValue `json:"kv"`
	PrevKV *KeyValue `json:"prevKv,omitempty"`
}

// WatchResponse carries the events of one or more revisions in order.
type WatchResponse struct {
	Events []Event
	// CompactRevision is set, with Err, when the requested start revision was
	// already compacted away.
	CompactRevision int64
	Err             error
}

// Store is the replicated state every control node shares.
type Store interface {
	// Range reads keys at the node's current applied revision.
	Range(ctx context.Context, key string, opts RangeOptions) (*RangeResponse, error)
	// Txn commits a transaction through consensus and returns once the
	// answering node has applied it.
	Txn(ctx context.Context, req TxnRequest) (*TxnResponse, error)
	// Watch streams changes of keys under prefix with revision >= fromRevision
	// (0 = from the next revision). The channel closes when ctx ends or on a
	// terminal error, which is delivered first.
	Watch(ctx context.Context, prefix string, fromRevision int64) <-chan WatchResponse
	// Revision is the node's latest applied revision.
	Revision() int64
	// WaitForRevision blocks until the node has applied rev or ctx ends.
	WaitForRevision(ctx context.Context, rev int64) error
}

// Get is a convenience for reading one key; it returns nil when absent.
func Get(ctx context.Context, s Store, key string, c Consistency) (*KeyValue, int64, error) {
	resp, err := s.Range(ctx, key, RangeOptions{Consistency: c})
	if err != nil {
		return nil, 0, err
	}
	if len(resp.KVs) == 0 {
		return nil, resp.Header.Revision, nil
	}
	return resp.KVs[0], resp.Header.Revision, nil
}

// PrefixEnd returns the exclusive range end that selects every key starting
// with prefix.
func PrefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

// ErrContended means an Update lost the race to other writers every time.
var ErrContended = errors.New("store: key is being changed concurrently; try again")

// Update is the optimistic read-modify-write every domain package uses: it
// reads key, lets fn compute the new value together with any other
// operations and guards, and commits them only if key is unchanged since it
// was read. When another writer got there first it waits for that newer
// state and runs fn again, a few times at most. fn sees nil for a missing
// key; an error from fn ends the update.
func Update(ctx context.Context, s Store, key string, fn func(kv *KeyValue) (value []byte, ops []Op, cmps []Compare, err error)) (*TxnResponse, error) {
	return update(ctx, s, key, false, fn)
}

// UpdateAbsent is Update for a key the caller believes absent (a device
// this node has never seen a record of): the first attempt skips the read
// and runs fn(nil) under the same guard, the key's mod revision being 0.
// A wrong belief costs one Txn whose compare fails; its else branch reads
// the key, and the next attempt runs fn on that, as Update would. Nothing
// is ever written over a key fn did not see.
func UpdateAbsent(ctx context.Context, s Store, key string, fn func(kv *KeyValue) (value []byte, ops []Op, cmps []Compare, err error)) (*TxnResponse, error) {
	return update(ctx, s, key, true, fn)
}

func update(ctx context.Context, s Store, key string, absent bool, fn func(kv *KeyValue) (value []byte, ops []Op, cmps []Compare, err error)) (*TxnResponse, error) {
	var kv *KeyValue
	read := !absent
	for attempt := 0; attempt < 5; attempt++ {
		if read {
			var err error
			if kv, _, err = Get(ctx, s, key, Local); err != nil {
				return nil, err
			}
		}
		read = true
		value, ops, cmps, err := fn(kv)
		if err != nil {
			return nil, err
		}
		var rev int64
		if kv != nil {
			rev = kv.ModRevision
		}
		req := TxnRequest{
			Compares: append([]Compare{ModRevisionIs(key, rev)}, cmps...),
			Then:     append([]Op{Put(key, value)}, ops...),
		}
		if absent {
			req.Else = []Op{GetOp(key)}
		}
		resp, err := s.Txn(ctx, req)
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return resp, nil
		}
		if err := s.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
		if absent && len(resp.Responses) == 1 {
			// The else branch read the key at the Txn's revision: the
			// next attempt starts from that instead of reading it again.
			absent, read, kv = false, false, nil
			if kvs := resp.Responses[0].KVs; len(kvs) == 1 {
				kv = kvs[0]
			}
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrContended, key)
}
