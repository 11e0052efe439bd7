package sqlitefsm

import (
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteSnapshot writes a consistent copy of the database to w using SQLite's
// VACUUM INTO on a read connection, so the apply goroutine is not blocked.
// The copy may include entries applied after the caller's raft index; that is
// harmless because applying records the applied index and skips entries at or
// below it.
func (s *State) WriteSnapshot(w io.Writer) error {
	tmp, err := s.snapshotFile()
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func (s *State) snapshotFile() (string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.wdb == nil {
		return "", fmt.Errorf("sqlitefsm: closed")
	}
	dir := filepath.Dir(s.path)
	f, err := os.CreateTemp(dir, ".snapshot-*.db")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	f.Close()
	os.Remove(tmp) // VACUUM INTO refuses to overwrite an existing file
	db, err := sql.Open("sqlite", dsn(s.path, false))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec(`VACUUM INTO ?`, tmp); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("sqlitefsm: snapshot: %w", err)
	}
	return tmp, nil
}

// Restore replaces the state with a snapshot written by WriteSnapshot. It must
// run on the apply goroutine. The new file is checked before the swap, so a
// damaged snapshot leaves the current state in place.
func (s *State) Restore(r io.Reader) error {
	dir := filepath.Dir(s.path)
	f, err := os.CreateTemp(dir, ".restore-*.db")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	f.Close()
	check, err := sql.Open("sqlite", "file:"+tmp+"?_pragma=query_only(1)")
	if err != nil {
		return err
	}
	var ok string
	err = check.QueryRow(`PRAGMA quick_check`).Scan(&ok)
	check.Close()
	if err != nil || ok != "ok" {
		return fmt.Errorf("sqlitefsm: snapshot failed its integrity check: %w %s", err, ok)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeHandles()
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(s.path + suffix); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	if err := s.open(); err != nil {
		return err
	}
	s.broadcast()
	return nil
}
