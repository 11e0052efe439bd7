package raftnode

import (
	"io"

	"github.com/hashicorp/raft"

	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// fsm adapts sqlitefsm.State to raft's batching FSM interface.
type fsm struct {
	state    *sqlitefsm.State
	restores func()
}

var _ raft.BatchingFSM = (*fsm)(nil)

func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	entries := make([]sqlitefsm.Entry, len(logs))
	for i, l := range logs {
		entries[i].Index = l.Index
		if l.Type == raft.LogCommand {
			entries[i].Data = l.Data
		}
	}
	return f.state.ApplyBatch(entries)
}

// Snapshot runs on raft's FSM goroutine: the applied index is recorded in
// the database first (entries that wrote nothing do not record it), so a
// restart finds the database as new as this snapshot and does not restore it.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.state.PersistAppliedIndex(); err != nil {
		return nil, err
	}
	return snapshot{f.state}, nil
}

func (f *fsm) Restore(r io.ReadCloser) error {
	defer r.Close()
	if err := f.state.Restore(r); err != nil {
		return err
	}
	if f.restores != nil {
		f.restores()
	}
	return nil
}

type snapshot struct{ state *sqlitefsm.State }

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.state.WriteSnapshot(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
