// Package commands runs the node commands the control plane hands to the
// agent: it remembers every idempotency key it started and finished in a
// journal on disk (written before a command runs and after it ends), so a
// command delivered again after a lost answer or an agent crash runs once;
// it acknowledges long commands, reports results until the control plane
// takes them, and stops work the control plane canceled.
package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/svcplatform/svc/agent/atomicfile"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Bounds of what the journal remembers: a key is kept at least as long as
// the control plane may deliver its command again.
const (
	journalMaxEntries = 10000
	journalMaxAge     = 48 * time.Hour
)

// Entry is one remembered command.
type Entry struct {
	Key        string                  `json:"key"`
	CommandID  string                  `json:"commandId"`
	Type       string                  `json:"commandType"`
	StartedAt  time.Time               `json:"startedAt"`
	FinishedAt *time.Time              `json:"finishedAt,omitempty"`
	Result     *agentapi.CommandResult `json:"result,omitempty"`
	// Runs counts how often the command body ran (for the operator and
	// the tests that prove a re-delivery runs once).
	Runs int `json:"runs"`
}

// Journal is the on-disk memory of idempotency keys: an append-only file
// of JSON lines, one per change, compacted when it grows. A change to a
// command whose repetition is unsafe is synced before the caller goes on;
// others are written without a sync, which survives a crash of the agent
// (the kernel keeps the page) and loses at most a repeatable command's
// memory in a crash of the host.
type Journal struct {
	path string

	mu      sync.Mutex
	entries map[string]*Entry
	f       *os.File
	lines   int
}

// OpenJournal reads (or starts) the journal at path.
func OpenJournal(path string) (*Journal, error) {
	j := &Journal{path: path, entries: map[string]*Entry{}}
	if raw, err := os.ReadFile(path); err == nil {
		for _, line := range bytes.Split(raw, []byte("\n")) {
			var e Entry
			if len(line) == 0 || json.Unmarshal(line, &e) != nil || e.Key == "" {
				continue // a torn last line from a crash is skipped
			}
			j.entries[e.Key] = &e
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := j.compact(); err != nil {
		return nil, err
	}
	return j, nil
}

// Close closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// Get returns a copy of the entry of key, if any.
func (j *Journal) Get(key string) (Entry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[key]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Begin records that the command of key starts running now.
func (j *Journal) Begin(key, commandID, typ string, durable bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[key]
	if !ok {
		e = &Entry{Key: key, CommandID: commandID, Type: typ}
		j.entries[key] = e
	}
	e.StartedAt, e.FinishedAt, e.Result = time.Now().UTC(), nil, nil
	e.Runs++
	return j.append(e, durable)
}

// Finish records the outcome of key.
func (j *Journal) Finish(key string, res agentapi.CommandResult, durable bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[key]
	if !ok {
		return errors.New("journal: finish without begin")
	}
	now := time.Now().UTC()
	e.FinishedAt, e.Result = &now, &res
	return j.append(e, durable)
}

func (j *Journal) append(e *Entry, durable bool) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return err
	}
	j.lines++
	if j.lines > 4*journalMaxEntries || j.lines > 2*len(j.entries)+1000 {
		return j.compact()
	}
	if durable {
		return j.f.Sync()
	}
	return nil
}

// compact drops old entries and rewrites the file with one line per entry.
func (j *Journal) compact() error {
	cut := time.Now().Add(-journalMaxAge)
	list := make([]*Entry, 0, len(j.entries))
	for k, e := range j.entries {
		if e.StartedAt.Before(cut) && e.FinishedAt != nil {
			delete(j.entries, k)
			continue
		}
		list = append(list, e)
	}
	sort.Slice(list, func(a, b int) bool { return list[a].StartedAt.Before(list[b].StartedAt) })
	if len(list) > journalMaxEntries {
		for _, e := range list[:len(list)-journalMaxEntries] {
			delete(j.entries, e.Key)
		}
		list = list[len(list)-journalMaxEntries:]
	}
	var buf bytes.Buffer
	for _, e := range list {
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		buf.Write(append(line, '\n'))
	}
	if err := atomicfile.Write(j.path, buf.Bytes(), 0o600, true); err != nil {
		return err
	}
	if j.f != nil {
		j.f.Close()
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	j.f, j.lines = f, len(list)
	return nil
}
