package sqlitefsm

import (
	"database/sql"
	"os"
	"sync"
	"time"
)

// checkpointer copies WAL frames into the database file from its own
// connection, so the apply goroutine's commits never wait for a checkpoint.
// It checkpoints once the WAL passes walCheckpointSize (fewer, larger
// checkpoints mean fewer fsyncs competing with the raft log's); PASSIVE
// never blocks the writer or readers, and a WAL grown very large is reset
// with TRUNCATE.
type checkpointer struct {
	db   *sql.DB
	done chan struct{}
	wg   sync.WaitGroup
}

const (
	checkpointEvery   = 100 * time.Millisecond
	walCheckpointSize = 4 << 20
	walTruncateSize   = 256 << 20
)

func startCheckpointer(path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
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
		mode := "PASSIVE"
		if fi.Size() > walTruncateSize {
			mode = "TRUNCATE"
		}
		// Errors (SQLITE_BUSY while a TRUNCATE waits for readers) are
		// retried at the next tick.
		c.db.Exec("PRAGMA wal_checkpoint(" + mode + ")")
	}
}

func (c *checkpointer) stop() error {
	close(c.done)
	c.wg.Wait()
	return c.db.Close()
}
