package store

import (
	"fmt"
)

// CompareTarget names what a Compare looks at. Values are append-only.
type CompareTarget int

const (
	TargetVersion        CompareTarget = 0
	TargetCreateRevision CompareTarget = 1
	TargetModRevision    CompareTarget = 2
	TargetValue          CompareTarget = 3
)

// CompareResult is the relation a Compare demands. Values are append-only.
type CompareResult int

const (
	Equal    CompareResult = 0
	NotEqual CompareResult = 1
	Less     CompareResult = 2
	Greater  CompareResult = 3
)

// Compare is one guard of a Txn. A missing key has version, create revision
// and mod revision 0; a value compare against a missing key is always false,
// as in etcd.
type Compare struct {
	Key    string        `json:"key"`
	Target CompareTarget `json:"target"`
	Result CompareResult `json:"result"`
	// Number is the operand for version and revision targets.
	Number int64 `json:"number,omitempty"`
	// Value is the operand for the value target.
	Value []byte `json:"value,omitempty"`
}

// OpType is the kind of a Txn operation. Values are append-only.
type OpType int

const (
	OpRange  OpType = 0
	OpPut    OpType = 1
	OpDelete OpType = 2
)

// Op is one operation inside a Txn branch.
type Op struct {
	Type  OpType `json:"type"`
	Key   string `json:"key"`
	End   string `json:"end,omitempty"`
	Value []byte `json:"value,omitempty"`
	// Limit, CountOnly and KeysOnly apply to OpRange.
	Limit     int64 `json:"limit,omitempty"`
	CountOnly bool  `json:"countOnly,omitempty"`
	KeysOnly  bool  `json:"keysOnly,omitempty"`
	// PrevKV asks puts and deletes to return what they replaced.
	PrevKV bool `json:"prevKv,omitempty"`
}

// TxnRequest is an atomic compare-and-swap over any number of keys.
type TxnRequest struct {
	Compares []Compare `json:"compares,omitempty"`
	Then     []Op      `json:"then,omitempty"`
	Else     []Op      `json:"else,omitempty"`
}

// OpResponse is the result of one Op, in request order.
type OpResponse struct {
	// Range results.
	KVs   []*KeyValue `json:"kvs,omitempty"`
	Count int64       `json:"count,omitempty"`
	More  bool        `json:"more,omitempty"`
	// Deleted counts keys removed by a delete.
	Deleted int64 `json:"deleted,omitempty"`
	// PrevKVs holds replaced values when PrevKV was asked.
	PrevKVs []*KeyValue `json:"prevKvs,omitempty"`
}

// TxnResponse reports which branch ran and the revision after it. A Txn that
// writes anything advances the revision by exactly one.
type TxnResponse struct {
	Header    Header       `json:"header"`
	Succeeded bool         `json:"succeeded"`
	Responses []OpResponse `json:"responses,omitempty"`
}

// Put builds a put operation.
func Put(key string, value []byte) Op { return Op{Type: OpPut, Key: key, Value: value} }

// Delete builds a delete of one key.
func Delete(key string) Op { return Op{Type: OpDelete, Key: key} }

// DeletePrefix builds a delete of every key under prefix.
func DeletePrefix(prefix string) Op {
	return Op{Type: OpDelete, Key: prefix, End: PrefixEnd(prefix)}
}

// GetOp builds a single-key range operation.
func GetOp(key string) Op { return Op{Type: OpRange, Key: key} }

// ModRevisionIs guards on a key's mod revision; 0 means "absent".
func ModRevisionIs(key string, rev int64) Compare {
	return Compare{Key: key, Target: TargetModRevision, Result: Equal, Number: rev}
}

// Absent guards that key does not exist.
func Absent(key string) Compare {
	return Compare{Key: key, Target: TargetVersion, Result: Equal, Number: 0}
}

// Validate rejects malformed requests before they reach consensus.
func (r *TxnRequest) Validate() error {
	for i, c := range r.Compares {
		if c.Key == "" {
			return fmt.Errorf("%w: compare %d has an empty key", ErrInvalidRequest, i)
		}
		if c.Target < TargetVersion || c.Target > TargetValue {
			return fmt.Errorf("%w: compare %d has unknown target %d", ErrInvalidRequest, i, c.Target)
		}
		if c.Result < Equal || c.Result > Greater {
			return fmt.Errorf("%w: compare %d has unknown result %d", ErrInvalidRequest, i, c.Result)
		}
	}
	for _, ops := range [][]Op{r.Then, r.Else} {
		for i, op := range ops {
			if op.Key == "" {
				return fmt.Errorf("%w: op %d has an empty key", ErrInvalidRequest, i)
			}
			if op.Type < OpRange || op.Type > OpDelete {
				return fmt.Errorf("%w: op %d has unknown type %d", ErrInvalidRequest, i, op.Type)
			}
			if op.End != "" && op.End != "\x00" && op.End <= op.Key {
				return fmt.Errorf("%w: op %d range end must sort after its key", ErrInvalidRequest, i)
			}
			if op.Type == OpPut && op.End != "" {
				return fmt.Errorf("%w: op %d: a put takes a single key", ErrInvalidRequest, i)
			}
		}
	}
	return nil
}

// Writes reports whether the request contains any put or delete.
func (r *TxnRequest) Writes() bool {
	for _, ops := range [][]Op{r.Then, r.Else} {
		for _, op := range ops {
			if op.Type != OpRange {
				return true
			}
		}
	}
	return false
}
