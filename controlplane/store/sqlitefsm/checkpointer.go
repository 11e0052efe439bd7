package sqlitefsm

import (
	"database/sql"
	"encoding/binary"
	"os"
	"sync"
	"time"
)

// checkpointer copies WAL frames into the database file from its own
// connection, so the apply goroutine's commits never wait for a checkpoint.
// It runs only PASSIVE checkpoints, which never block the writer or readers
// (a TRUNCATE would block new writers while it waits for readers), once
// walCheckpointFrames frames wait to be copied. SQLite restarts the WAL from
// its beginning by itself once every frame is checkpointed and no reader
// still uses it, so the WAL file keeps its size: its size says nothing about
// the frames waiting, which the WAL index header does (see pendingFrames).
type checkpointer struct {
	db   *sql.DB
	done chan struct{}
	wg   sync.WaitGroup
}

const (
	checkpointEvery     = 250 * time.Millisecond
	walCheckpointFrames = 1024 // 4 MiB of 4 KiB pages
)

func startCheckpointer(path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, done: make(chan struct{})}
	c.wg.Add(1)
	go c.loop(path)
	return c, nil
}

func (c *checkpointer) loop(path string) {
	defer c.wg.Done()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if n, err := pendingFrames(path + "-shm"); err == nil && n < walCheckpointFrames {
			continue
		}
		// A busy or partial checkpoint is simply retried at the next tick.
		c.db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	}
}

func (c *checkpointer) stop() error {
	close(c.done)
	c.wg.Wait()
	return c.db.Close()
}

// pendingFrames reads how many WAL frames are not yet copied into the
// database: mxFrame minus nBackfill of the WAL index in the -shm file
// (https://www.sqlite.org/walformat.html, "the WAL-index header" and "the
// checkpoint information"; both are 32-bit words in the host's byte order,
// little-endian on the platforms we build for). The read is not locked, so
// the answer may be a moment old; it only decides when to checkpoint.
func pendingFrames(shm string) (uint32, error) {
	f, err := os.Open(shm)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var hdr [100]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0, err
	}
	mxFrame := binary.LittleEndian.Uint32(hdr[16:20])
	nBackfill := binary.LittleEndian.Uint32(hdr[96:100])
	if nBackfill > mxFrame {
		return 0, nil // the WAL was just restarted
	}
	return mxFrame - nBackfill, nil
}
