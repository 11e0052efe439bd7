package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/shared/buildinfo"
)

// Check is one health check of this node.
type Check struct {
	Name    string
	Status  Level
	Message string
}

// Health is this node's health: the status anyone may see and the
// details behind it.
type Health struct {
	Status  Level
	Version string

	NodeID, ClusterID string
	RaftState         string
	LeaderID          string
	AppliedIndex      int64
	Revision          int64
	Checks            []Check
}

// Health takes this node's health snapshot.
func (s *Service) Health(ctx context.Context) Health {
	n := s.d.Node
	_, leaderID := n.Raft().LeaderWithID()
	var checks []Check
	status := OK
	if leaderID == "" {
		status = Unavailable
		checks = append(checks, Check{Name: "leader", Status: Unavailable, Message: "no leader is known; writes are not possible"})
	} else {
		checks = append(checks, Check{Name: "leader", Status: OK, Message: "leader " + string(leaderID)})
	}
	lag := int64(n.Raft().CommitIndex()) - int64(n.State().AppliedIndex())
	switch {
	case lag > 10000:
		if status == OK {
			status = Degraded
		}
		checks = append(checks, Check{Name: "apply-lag", Status: Degraded, Message: fmt.Sprintf("%d committed entries not yet applied", lag)})
	default:
		checks = append(checks, Check{Name: "apply-lag", Status: OK, Message: fmt.Sprintf("%d entries behind commit", max(lag, 0))})
	}
	for _, c := range storeChecks(n) {
		if c.Status != OK && status == OK {
			status = Degraded
		}
		checks = append(checks, c)
	}
	return Health{
		Status: status, Version: buildinfo.Version,
		NodeID: s.d.NodeID, ClusterID: s.ID(ctx),
		RaftState: n.Raft().State().String(), LeaderID: string(leaderID),
		AppliedIndex: int64(n.State().AppliedIndex()), Revision: n.Revision(),
		Checks: checks,
	}
}

// storeChecks report what keeps this node's store from taking writes: the
// data directory's free space against its reserve, and an apply halted by
// a local failure (such as a full disk).
func storeChecks(n *raftnode.Node) []Check {
	st := n.Storage()
	disk := Check{Name: "storage", Status: OK,
		Message: fmt.Sprintf("%s free of %s in %s; writes are refused below %s", mib(st.FreeBytes), mib(st.TotalBytes), st.Dir, mib(st.ReserveBytes))}
	if st.Full {
		disk.Status = Degraded
		disk.Message = fmt.Sprintf("storage_full: %s free in %s, below the reserve of %s; this node refuses writes until space is freed, reads go on",
			mib(st.FreeBytes), st.Dir, mib(st.ReserveBytes))
	}
	apply := Check{Name: "apply", Status: OK, Message: "applying committed entries"}
	if since, err := n.ApplyStalled(); err != nil {
		apply.Status = Degraded
		apply.Message = fmt.Sprintf("applying is halted since %s by a local failure and retried (nothing is skipped): %v",
			since.UTC().Format(time.RFC3339), err)
	}
	return []Check{disk, apply}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// ReadinessCheck is one check of a readiness report.
type ReadinessCheck struct {
	Name     string
	OK       bool
	Skipped  bool
	Duration time.Duration
	Message  string
}

// Readiness is whether this node can serve what an operator asked about.
type Readiness struct {
	NodeID    string
	CheckedAt time.Time
	Ready     bool
	Checks    []ReadinessCheck
}

// Readiness checks what an operator asked for; the database check writes
// through raft and reads the value back linearizably.
func (s *Service) Readiness(ctx context.Context, checkDatabase, checkEngine bool) Readiness {
	rep := Readiness{NodeID: s.d.NodeID, CheckedAt: time.Now().UTC(), Ready: true}
	add := func(c ReadinessCheck) {
		rep.Checks = append(rep.Checks, c)
		if !c.OK && !c.Skipped {
			rep.Ready = false
		}
	}
	start := time.Now()
	_, leaderID := s.d.Node.Raft().LeaderWithID()
	add(ReadinessCheck{Name: "leader", OK: leaderID != "", Duration: time.Since(start),
		Message: map[bool]string{true: "leader " + string(leaderID), false: "no leader is known"}[leaderID != ""]})

	start = time.Now()
	for _, c := range storeChecks(s.d.Node) {
		add(ReadinessCheck{Name: c.Name, OK: c.Status == OK, Duration: time.Since(start), Message: c.Message})
	}

	if checkDatabase {
		start = time.Now()
		c := ReadinessCheck{Name: "database"}
		var nonce [8]byte
		rand.Read(nonce[:])
		val, _ := json.Marshal(map[string]string{"nonce": hex.EncodeToString(nonce[:]), "checkedAt": rep.CheckedAt.Format(time.RFC3339Nano)})
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		key := ReadinessPrefix + s.d.NodeID
		_, err := s.d.Node.Txn(cctx, store.TxnRequest{Then: []store.Op{store.Put(key, val)}})
		if err == nil {
			var kv *store.KeyValue
			kv, _, err = store.Get(cctx, s.d.Node, key, store.Linearizable)
			if err == nil && (kv == nil || string(kv.Value) != string(val)) {
				err = fmt.Errorf("read back a different value than written")
			}
		}
		cancel()
		c.Duration = time.Since(start)
		c.OK = err == nil
		if err != nil {
			c.Message = "write-read round trip through the replicated store failed: " + err.Error()
		} else {
			c.Message = "write-read round trip through the replicated store succeeded"
		}
		add(c)
	} else {
		add(ReadinessCheck{Name: "database", Skipped: true, Message: "not requested"})
	}

	if checkEngine {
		start = time.Now()
		running, enrolled, err := 0, 0, error(nil)
		if s.d.Engines != nil {
			running, enrolled, err = s.d.Engines(ctx)
		}
		c := ReadinessCheck{Name: "engine", Duration: time.Since(start)}
		switch {
		case err != nil:
			c.Message = err.Error()
		case enrolled == 0:
			c.Message = "no media server is enrolled; enroll a media host first"
		case running == 0:
			c.Message = fmt.Sprintf("none of the %d enrolled media servers has its engine running", enrolled)
		default:
			c.OK = true
			c.Message = fmt.Sprintf("%d of %d enrolled media servers have their engine running", running, enrolled)
		}
		add(c)
	} else {
		add(ReadinessCheck{Name: "engine", Skipped: true, Message: "not requested"})
	}
	return rep
}
