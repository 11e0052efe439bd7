package main

import (
	"strings"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// raftMetrics receives hashicorp/raft's timing samples (in ms) and counts
// them during a measured window, to show where a store write waits: the
// leader's log write (one fsync per dispatch) or the state machine apply.
var raftMetrics = &windowSink{}

func init() {
	conf := metrics.DefaultConfig("")
	conf.EnableHostname = false
	conf.EnableRuntimeMetrics = false
	conf.TimerGranularity = time.Millisecond
	metrics.NewGlobal(conf, raftMetrics)
}

// sampleStat sums one sampled metric.
type sampleStat struct {
	N   int
	Sum float64
}

func (s sampleStat) mean() float64 {
	if s.N == 0 {
		return 0
	}
	return s.Sum / float64(s.N)
}

// windowSink is a go-metrics sink that keeps only samples taken between
// begin and end.
type windowSink struct {
	mu     sync.Mutex
	active bool
	stats  map[string]sampleStat
}

func (s *windowSink) begin() {
	s.mu.Lock()
	s.active, s.stats = true, map[string]sampleStat{}
	s.mu.Unlock()
}

func (s *windowSink) end() map[string]sampleStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = false
	return s.stats
}

func (s *windowSink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }

func (s *windowSink) AddSampleWithLabels(key []string, val float32, _ []metrics.Label) {
	s.mu.Lock()
	if s.active {
		k := strings.Join(key, ".")
		st := s.stats[k]
		st.N++
		st.Sum += float64(val)
		s.stats[k] = st
	}
	s.mu.Unlock()
}

func (s *windowSink) SetGauge([]string, float32)                               {}
func (s *windowSink) SetGaugeWithLabels([]string, float32, []metrics.Label)    {}
func (s *windowSink) EmitKey([]string, float32)                                {}
func (s *windowSink) IncrCounter([]string, float32)                            {}
func (s *windowSink) IncrCounterWithLabels([]string, float32, []metrics.Label) {}

// raftWindow summarises the raft pipeline of a store run.
type raftWindow struct {
	Valid bool
	// Leader log writes: each dispatch appends a batch to the raft WAL and
	// fsyncs it.
	Dispatches     float64 // per second
	DispatchMs     float64 // mean duration
	DispatchBusy   float64 // fraction of the window the leader loop spent in them
	FSMBatches     float64 // per second, per node
	FSMBatchSize   float64 // entries per FSM batch
	FSMBatchMs     float64 // mean duration of one batch apply (SQLite transaction)
	FSMBusy        float64 // fraction of the window each node's FSM goroutine was applying
	EntriesPerSync float64 // committed puts per leader log write
}

func summariseRaft(stats map[string]sampleStat, window time.Duration, nodes int, puts int) raftWindow {
	d, ok := stats["raft.leader.dispatchLog"]
	if !ok || window <= 0 {
		return raftWindow{}
	}
	b, bn := stats["raft.fsm.applyBatch"], stats["raft.fsm.applyBatchNum"]
	sec := window.Seconds()
	w := raftWindow{
		Valid:        true,
		Dispatches:   float64(d.N) / sec,
		DispatchMs:   d.mean(),
		DispatchBusy: d.Sum / 1000 / sec,
		FSMBatches:   float64(b.N) / float64(nodes) / sec,
		FSMBatchSize: bn.mean(),
		FSMBatchMs:   b.mean(),
		FSMBusy:      b.Sum / 1000 / sec / float64(nodes),
	}
	if d.N > 0 {
		w.EntriesPerSync = float64(puts) / float64(d.N)
	}
	return w
}
