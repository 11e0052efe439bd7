package main

import (
	"fmt"
	"io"
)

// writeLimits writes the "what limits it" part: CPU use measured during
// each run, then the analysis notes.
func (r *report) writeLimits(w io.Writer) {
	fmt.Fprintln(w, "### What limits it")
	fmt.Fprintln(w)
	fmt.Fprintln(
		w,
		"CPU in use during each measured window, in cores (\"bench\" is this process: the clients, and for the store cases the store itself; "+
			"\"etcd\" is the etcd process; \"other\" is the rest of the machine, which is shared; \"CPU µs per put\" counts bench + etcd):",
	)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | writers | bench cores | etcd cores | other processes cores | iowait cores | CPU µs per put |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|")
	for _, res := range r.Results {
		if res.Failed != "" || !res.CPU.Valid {
			continue
		}
		perPut := "-"
		if res.Ops > 0 {
			perPut = fmt.Sprintf("%.0f", (res.CPU.Self+res.CPU.Server)*res.Elapsed.Seconds()*1e6/float64(res.Ops))
		}
		etcd := "-"
		if res.Case == "etcd" {
			etcd = fmt.Sprintf("%.2f", res.CPU.Server)
		}
		fmt.Fprintf(w, "| %s | %d | %.2f | %s | %.2f | %.2f | %s |\n", r.caseLabel(res.Case), res.Writers,
			res.CPU.Self, etcd, max(0, res.CPU.Machine-res.CPU.Self-res.CPU.Server), res.CPU.IOWait, perPut)
	}
	fmt.Fprintln(w)
	r.writeRaftTable(w)
	r.writeReading(w)
	fmt.Fprintln(w, limitsNotes)
	fmt.Fprintln(w)
}

// writeRaftTable shows the store's raft pipeline from hashicorp/raft's own
// timing metrics: the leader's log writes (append + fsync of the raft WAL)
// and the state machine's batch applies (one SQLite transaction each).
func (r *report) writeRaftTable(w io.Writer) {
	var rows []result
	for _, res := range r.Results {
		if res.Failed == "" && res.Raft.Valid {
			rows = append(rows, res)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "Store raft pipeline in the same windows (hashicorp/raft timing metrics; FSM figures are per node):")
	fmt.Fprintln(w)
	fmt.Fprintln(
		w,
		"| case | writers | leader log writes/s | puts per log write | ms per log write | leader loop in log writes | FSM batches/s | entries per "+
			"FSM batch | ms per FSM batch | FSM busy |",
	)
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, res := range rows {
		x := res.Raft
		fmt.Fprintf(w, "| %s | %d | %.0f | %.1f | %.2f | %.0f%% | %.0f | %.1f | %.2f | %.0f%% |\n", r.caseLabel(res.Case), res.Writers,
			x.Dispatches, x.EntriesPerSync, x.DispatchMs, 100*x.DispatchBusy, x.FSMBatches, x.FSMBatchSize, x.FSMBatchMs, 100*x.FSMBusy)
	}
	fmt.Fprintln(w)
}
