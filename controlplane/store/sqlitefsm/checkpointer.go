package sqlitefsm

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// checkpointer copies WAL frames into the database file from its own
// connection, so the apply goroutine's commits never wait for a checkpoint.
// It runs PASSIVE checkpoints, which never block the writer or readers, once
// walCheckpointBytes wait to be copied. SQLite restarts the WAL from its
// beginning by itself once every frame is checkpointed and no reader still
// uses it, and journal_size_limit then cuts the file back to walKeepBytes;
// the WAL file's size says nothing about the frames waiting, which the WAL
// index header does (see walFrames).
//
// Under sustained writes with readers always present, the WAL never starts
// over (a reader always uses it) and would grow without bound, however well
// passive checkpoints keep up. Once it holds walRestartBytes the
// checkpointer raises tooBig, and the apply goroutine runs a RESTART
// checkpoint itself before its next batch: it waits (up to the writer's
// busy timeout) for readers to move to the newest snapshot, copies every
// frame, and its next write starts the WAL over. The writer is slowed for
// that moment rather than the WAL growing. (A RESTART from the
// checkpointer's own connection would wait for the write lock, which the
// apply goroutine takes again at once after each commit.)
type checkpointer struct {
	db       *sql.DB
	conn     *sql.Conn
	pageSize int
	// checkpointAt and restartAt start as walCheckpointBytes and
	// walRestartBytes; SetWALLimit scales them to the volume.
	checkpointAt, restartAt atomic.Int64
	tooBig                  atomic.Bool
	restartAfter            time.Time // only the writer reads and sets it
	done                    chan struct{}
	wg                      sync.WaitGroup
}

const (
	checkpointEvery = 50 * time.Millisecond
	walKeepBytes    = 8 << 20
)

// The WAL sizes that start a passive checkpoint and a restart (variables
// so that a test can make them small).
var (
	walCheckpointBytes int64 = 4 << 20
	walRestartBytes    int64 = 32 << 20
)

func startCheckpointer(path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		db.Close()
		return nil, err
	}
	c := &checkpointer{db: db, conn: conn, done: make(chan struct{})}
	c.checkpointAt.Store(walCheckpointBytes)
	c.restartAt.Store(walRestartBytes)
	if err := conn.QueryRowContext(context.Background(), "PRAGMA page_size").Scan(&c.pageSize); err != nil || c.pageSize <= 0 {
		c.pageSize = 4096
	}
	c.wg.Add(1)
	go c.loop(path)
	return c, nil
}

func (c *checkpointer) loop(path string) {
	defer c.wg.Done()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	ctx := context.Background()
	var lastTotal uint32
	var sameSince time.Time
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		total, pending, err := walFrames(path + "-shm")
		if err != nil {
			continue
		}
		c.tooBig.Store(int64(total)*int64(c.pageSize) >= c.restartAt.Load())
		if total != lastTotal {
			lastTotal, sameSince = total, time.Now()
		}
		switch {
		case int64(pending)*int64(c.pageSize) >= c.checkpointAt.Load():
			// A busy or partial checkpoint is simply retried at the next tick.
			c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		case total > 0 && time.Since(sameSince) >= idleTruncate:
			// Nothing was written for a while: copy what is left and give
			// the WAL file's space back, which only a write would do
			// otherwise. A node that refuses writes for lack of space
			// gets it back this way. Busy (a reader) is tried again later.
			c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
		}
	}
}

// idleTruncate is how long the WAL must go without new frames before the
// checkpointer empties its file.
const idleTruncate = time.Second

// setLimit makes restart the WAL size that holds writers off for a
// restart, with passive checkpoints from an eighth of it.
func (c *checkpointer) setLimit(restart int64) {
	c.restartAt.Store(restart)
	c.checkpointAt.Store(max(restart/8, 256<<10))
}

// restartIfTooBig runs, on the writer's connection and outside a
// transaction, the RESTART checkpoint the checkpointer asked for. A passive
// checkpoint running at that moment makes it answer busy at once, and a
// reader still on an old snapshot makes it wait; it is tried for at most
// restartBudget, and after a failure not again for restartBackoff, so a
// long reader (a snapshot being copied) slows the writer down by a quarter
// at most instead of stopping it.
func (c *checkpointer) restartIfTooBig(wdb *sql.DB) {
	if !c.tooBig.Load() || time.Now().Before(c.restartAfter) {
		return
	}
	wdb.Exec("PRAGMA busy_timeout=" + strconv.Itoa(int(restartPause.Milliseconds())))
	defer wdb.Exec("PRAGMA busy_timeout=" + strconv.Itoa(int(writerBusyTimeout.Milliseconds())))
	for start := time.Now(); time.Since(start) < restartBudget; time.Sleep(restartPause) {
		var busy, frames, copied int
		if err := wdb.QueryRow("PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &frames, &copied); err != nil {
			break // a failing checkpoint is the apply's own failure to report
		}
		if busy == 0 {
			c.tooBig.Store(false)
			return
		}
	}
	c.restartAfter = time.Now().Add(restartBackoff)
}

// How long the writer tries its RESTART checkpoint, how far apart the
// tries are, and how long it leaves the WAL alone after failing.
const (
	restartBudget  = 250 * time.Millisecond
	restartPause   = 5 * time.Millisecond
	restartBackoff = time.Second
)

func (c *checkpointer) stop() error {
	close(c.done)
	c.wg.Wait()
	c.conn.Close()
	return c.db.Close()
}

// walFrames reads how many frames the WAL holds (mxFrame of the WAL index
// in the -shm file) and how many of them are not yet copied into the
// database (mxFrame minus nBackfill); see
// https://www.sqlite.org/walformat.html, "the WAL-index header" and "the
// checkpoint information". Both are 32-bit words in the host's byte order,
// little-endian on the platforms we build for. The read is not locked, so
// the answer may be a moment old; it only decides when to checkpoint.
func walFrames(shm string) (total, pending uint32, err error) {
	f, err := os.Open(shm)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var hdr [100]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0, 0, err
	}
	mxFrame := binary.LittleEndian.Uint32(hdr[16:20])
	nBackfill := binary.LittleEndian.Uint32(hdr[96:100])
	if nBackfill > mxFrame {
		return mxFrame, 0, nil // the WAL was just restarted
	}
	return mxFrame, mxFrame - nBackfill, nil
}
