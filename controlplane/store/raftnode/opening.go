package raftnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnreadableData means this node's raft log, snapshots or state database
// cannot be opened. The node cannot start on them; its data must be
// replaced from the other members (svc rejoin), or from a backup when it
// was the only member.
var ErrUnreadableData = errors.New("raftnode: this node's store data cannot be opened")

// ErrDataDirInUse means another process runs a node on the data directory.
var ErrDataDirInUse = errors.New("raftnode: the data directory is in use by another process")

// unreadable runs open and turns its error, or its panic (raft.NewRaft
// panics on a log entry it cannot read), into ErrUnreadableData naming what
// could not be opened.
func unreadable(what, path string, open func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s %s: %v", ErrUnreadableData, what, path, r)
		}
	}()
	if err := open(); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrUnreadableData, what, path, err)
	}
	return nil
}

// LockFile is the file in the data directory that a running node holds an
// exclusive lock on.
const LockFile = "svc.lock"

// dirLock is an exclusive flock on the data directory's lock file, so two
// processes never open the same raft log and database.
type dirLock struct{ f *os.File }

func lockDataDir(dir string) (*dirLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrDataDirInUse, dir)
		}
		return nil, err
	}
	return &dirLock{f: f}, nil
}

// LockDataDir takes the data directory's lock for a tool that changes the
// directory while no node runs on it (svc rejoin); release it with the
// returned function.
func LockDataDir(dir string) (release func() error, err error) {
	l, err := lockDataDir(dir)
	if err != nil {
		return nil, err
	}
	return l.release, nil
}

func (l *dirLock) release() error {
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	return l.f.Close()
}

// storeFiles are the data directory's entries that hold this node's copy of
// the replicated state; everything else (the cluster key above all) stays.
var storeFiles = []string{"raft", "state.db", "state.db-wal", "state.db-shm"}

// MoveAside moves this node's raft log, snapshots and state database out of
// the way into a new directory inside dataDir, named after the time, and
// returns that directory. The node then starts as a new member with no
// state. The caller holds the data directory's lock (LockDataDir).
func MoveAside(dataDir string, now time.Time) (string, error) {
	aside := filepath.Join(dataDir, "unreadable-"+now.UTC().Format("20060102T150405Z"))
	if err := os.Mkdir(aside, 0o700); err != nil {
		return "", err
	}
	for _, name := range storeFiles {
		err := os.Rename(filepath.Join(dataDir, name), filepath.Join(aside, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return aside, err
		}
	}
	return aside, nil
}
