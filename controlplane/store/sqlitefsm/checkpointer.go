package sqlitefsm

import (
	"database/sql"
	"os"
	"sync"
	"time"
)

// checkpointer copies WAL frames into the database file from its own
// connection, so the apply goroutine's commits never wait for a checkpoint.
// It runs only PASSIVE checkpoints, which never block the writer or readers
// (a TRUNCATE would block new writers while it waits for readers), once the
// WAL passes walCheckpointSize. SQLite restarts the WAL from its beginning by
// itself once every frame is checkpointed and no reader still uses it.
type checkpointer struct {
	db   *sql.DB
	done chan struct{}
	wg   sync.WaitGroup
}

const (
	checkpointEvery   = 100 * time.Millisecond
	walCheckpointSize = 4 << 20
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
		fi, err := os.Stat(path + "-wal")
		if err != nil || fi.Size() < walCheckpointSize {
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
