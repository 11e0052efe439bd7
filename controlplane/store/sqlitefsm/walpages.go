package sqlitefsm

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// WALPages is what a step wrote to SQLite's WAL: the frames (one written
// page each) per b-tree, named as SQLite's dbstat names them (a table, or
// an index such as idx_channels_group_key), the commits and the bytes. It
// is how the write cost of a kind of Txn is measured (the tests and the
// store benchmark use it): every frame is a page written twice, once to
// the WAL and once more when checkpointed.
type WALPages struct {
	Frames  map[string]int
	Total   int
	Commits int
	Bytes   int64
}

func (w WALPages) String() string {
	names := make([]string, 0, len(w.Frames))
	for n := range w.Frames {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return w.Frames[names[i]] > w.Frames[names[j]] || w.Frames[names[i]] == w.Frames[names[j]] && names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, w.Frames[n])
	}
	return fmt.Sprintf("%d frames in %d commits (%d bytes): %s", w.Total, w.Commits, w.Bytes, strings.Join(parts, " "))
}

// MeasureWAL checkpoints the WAL and has it start over, runs step, and
// attributes every frame the WAL gained meanwhile to the b-tree its page
// belongs to. Anything else the node writes meanwhile counts too, and a
// step large enough to start a checkpoint is undercounted. It is a
// diagnostic for tests and benchmarks, not for a serving node's hot path.
func (s *State) MeasureWAL(step func()) (WALPages, error) {
	s.mu.RLock()
	wdb, rdb := s.wdb, s.rdb
	s.mu.RUnlock()
	if wdb == nil {
		return WALPages{}, fmt.Errorf("sqlitefsm: closed")
	}
	for try := 0; ; try++ {
		var busy, frames, copied int
		if err := wdb.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &copied); err != nil {
			return WALPages{}, err
		}
		if busy == 0 {
			break
		}
		if try == 500 {
			return WALPages{}, fmt.Errorf("sqlitefsm: the WAL stays busy; cannot measure")
		}
		// A reader's snapshot pins the WAL: give it time to finish.
		time.Sleep(10 * time.Millisecond)
	}
	step()
	raw, err := os.ReadFile(s.path + "-wal")
	if err != nil || len(raw) < 32 {
		return WALPages{Frames: map[string]int{}}, err
	}
	pageSize := int(binary.BigEndian.Uint32(raw[8:12]))
	salt1, salt2 := binary.BigEndian.Uint32(raw[16:20]), binary.BigEndian.Uint32(raw[20:24])
	owner := map[uint32]string{}
	rows, err := rdb.Query(`SELECT pageno, name FROM dbstat`)
	if err != nil {
		return WALPages{}, err
	}
	for rows.Next() {
		var p uint32
		var n string
		if err := rows.Scan(&p, &n); err != nil {
			rows.Close()
			return WALPages{}, err
		}
		owner[p] = n
	}
	rows.Close()
	out := WALPages{Frames: map[string]int{}}
	for off := 32; off+24+pageSize <= len(raw); off += 24 + pageSize {
		h := raw[off : off+24]
		if binary.BigEndian.Uint32(h[8:12]) != salt1 || binary.BigEndian.Uint32(h[12:16]) != salt2 {
			break // a frame of an earlier generation of the WAL
		}
		page := binary.BigEndian.Uint32(h[0:4])
		name := owner[page]
		if name == "" {
			name = "free-or-new-page"
		}
		out.Frames[name]++
		out.Total++
		out.Bytes += int64(24 + pageSize)
		if binary.BigEndian.Uint32(h[4:8]) != 0 {
			out.Commits++
		}
	}
	return out, nil
}
