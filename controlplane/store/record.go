package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Domain packages keep their records as JSON values. These helpers are
// the one place such a value is read, written and read-modify-written, so
// a record that does not decode always names its key, and no domain
// repeats the decode.

// Decode decodes kv's value as a T; the error names the key.
func Decode[T any](kv *KeyValue) (T, error) {
	var v T
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return v, fmt.Errorf("stored record %s: %w", kv.Key, err)
	}
	return v, nil
}

// GetRecord reads key as a T with the given consistency. kv is nil when
// the key is absent (the record is then T's zero value); otherwise it
// carries the revisions a later compare needs.
func GetRecord[T any](ctx context.Context, s Store, key string, c Consistency) (rec T, kv *KeyValue, err error) {
	kv, _, err = Get(ctx, s, key, c)
	if err != nil || kv == nil {
		return rec, nil, err
	}
	rec, err = Decode[T](kv)
	return rec, kv, err
}

// Records reads every record whose key starts with prefix, in key order.
func Records[T any](ctx context.Context, s Store, prefix string, c Consistency) ([]T, error) {
	resp, err := s.Range(ctx, prefix, RangeOptions{End: PrefixEnd(prefix), Consistency: c})
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(resp.KVs))
	for _, kv := range resp.KVs {
		v, err := Decode[T](kv)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// PutRecord is the Put of v encoded as JSON.
func PutRecord(key string, v any) (Op, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Op{}, fmt.Errorf("encoding record %s: %w", key, err)
	}
	return Put(key, b), nil
}

// UpdateRecord is Update for a JSON record: fn gets the current record
// (nil when the key is absent) and returns the one to store, with any other
// operations and guards of the same Txn. As with Update, fn may run more
// than once and an error from it ends the update.
func UpdateRecord[T any](ctx context.Context, s Store, key string, fn func(cur *T) (next *T, ops []Op, cmps []Compare, err error)) (*TxnResponse, error) {
	return Update(ctx, s, key, func(kv *KeyValue) ([]byte, []Op, []Compare, error) {
		var cur *T
		if kv != nil {
			v, err := Decode[T](kv)
			if err != nil {
				return nil, nil, nil, err
			}
			cur = &v
		}
		next, ops, cmps, err := fn(cur)
		if err != nil {
			return nil, nil, nil, err
		}
		b, err := json.Marshal(next)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("encoding record %s: %w", key, err)
		}
		return b, ops, cmps, nil
	})
}
