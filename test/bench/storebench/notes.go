package main

import (
	"fmt"
	"io"
)

// writeReading states what this run's own numbers show.
func (r *report) writeReading(w io.Writer) {
	if s, ok := r.find("single", 64); ok && s.Raft.Valid && s.CPU.Valid {
		verdict := "so the serial apply was the limit."
		if s.Raft.FSMBusy < 0.75 {
			verdict = "so in this run the serial apply was not saturated; look at the other columns."
		}
		fmt.Fprintf(w, "In this run, with 64 writers the single node's state-machine goroutine was applying %.0f%% of the time "+
			"(%.0f µs per entry, %.1f entries per SQLite transaction) while the whole process used %.2f of %d cores, %s\n\n",
			100*s.Raft.FSMBusy, 1000*s.Raft.FSMBatchMs/max(s.Raft.FSMBatchSize, 1), s.Raft.FSMBatchSize, s.CPU.Self, s.CPU.Cores, verdict)
	}
	worst := 0.0
	for _, res := range r.Results {
		if res.Failed == "" && res.CPU.Valid {
			worst = max(worst, res.CPU.Machine-res.CPU.Self-res.CPU.Server)
		}
	}
	if worst >= 0.3 {
		fmt.Fprintf(w, "Other processes on this shared machine used up to %.1f cores during the measured windows, "+
			"so expect run-to-run variation of the absolute numbers.\n\n", worst)
	}
}

// limitsNotes is written by hand from a profiled run; update it when the
// store's write path changes.
const limitsNotes = `Where the store's time goes, from a CPU profile of the single-node, 64-writer run
(` + "`go run ./test/bench/storebench -cases single -cpuprofile /tmp/store.pprof`" + `, then
` + "`go tool pprof -top -cum -tagfocus 'writers=^64$' /tmp/store.pprof`" + `) taken when this text
was written (2-core AMD EPYC VM, November 2026):

- About 80% of the case's CPU samples are inside the raft FSM goroutine
  (` + "`raft.(*Raft).runFSM` → `sqlitefsm.(*State).ApplyBatch`" + `). hashicorp/raft applies committed
  entries on that one goroutine, so the apply cost of a put there (100-130 µs of CPU per
  entry at 10-15 entries per SQLite transaction) caps throughput near 8-10k puts/s however
  many writers wait, and the second core stays mostly idle.
- Inside the apply, statement preparation is about a quarter of the case's CPU: modernc
  SQLite re-parses the SQL text on every ` + "`Exec`/`QueryRow`" + `, and a put runs SAVEPOINT, a SELECT
  of the previous version, an upsert into kv, an insert into history and RELEASE.
  ` + "`Tx.Commit`" + ` is another quarter: SQLite writes its WAL one page per ` + "`pwrite`" + `, and its
  auto-checkpoint (with an fsync) runs inline on the apply path, a likely source of p99. JSON
  decoding of the command is about 5%.
- The raft log is not the limit: the leader's WAL append + fsync took about 0.6 ms per
  batch and the leader loop (about 10% of the CPU, mostly that fsync) spent under half its
  time there. The benchmark goroutines are about 6%; GC is under 1%.
- The store cases call ` + "`Txn`" + ` in-process while etcd is reached over gRPC on loopback, which
  favours the store slightly. The 3-node cluster runs three replicas (three serial applies)
  in one process on the same two cores, so its figures are CPU-bound and understate what
  three machines would do.`
