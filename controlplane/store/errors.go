package store

import "errors"

// Sentinel errors of the store. Callers test them with errors.Is.
var (
	// ErrInvalidRequest marks a malformed Txn or Range.
	ErrInvalidRequest = errors.New("store: invalid request")
	// ErrCompacted means a watch asked for history that retention removed.
	ErrCompacted = errors.New("store: required revision has been compacted")
	// ErrNoLeader means no leader is known, so the write was not attempted.
	ErrNoLeader = errors.New("store: no leader")
	// ErrUnknownOutcome means the write may or may not have been committed
	// (the leader was lost after the proposal left this node). Do not replay
	// blindly; read the state first.
	ErrUnknownOutcome = errors.New("store: outcome of the write is unknown")
	// ErrNotYetVisible means the write was committed but this node had not
	// applied it before the deadline. Do not replay the write; read again
	// later or with linearizable consistency.
	ErrNotYetVisible = errors.New("store: write committed but not yet applied on this node")
	// ErrStorageFull means this node refused the write because its data
	// directory's filesystem is below its free-space reserve. Nothing was
	// written; retry once space is freed (or through another node when only
	// this one is short of space).
	ErrStorageFull = errors.New("store: not enough free disk space for writes")
	// ErrClosed means the store is shut down.
	ErrClosed = errors.New("store: closed")
)
