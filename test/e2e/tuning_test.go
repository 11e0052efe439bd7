package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/agent"
	"github.com/svcplatform/svc/agent/hosttune"
	"github.com/svcplatform/svc/shared/hosttuning"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// Environment of the network namespace child.
const (
	netnsReportEnv = "SVC_E2E_NETNS_REPORT"
	netnsBinaryEnv = "SVC_E2E_NETNS_BINARY"
)

var tuningValues = map[string]string{
	"net.core.somaxconn":           "3072",
	"net.ipv4.ip_local_port_range": "21000 39000",
	"net.ipv4.tcp_fin_timeout":     "19",
	"net.ipv4.tcp_max_syn_backlog": "4096",
}

type tuningReport struct {
	CanApply    bool
	PlanChanges int
	Applied     bool
	CommandID   string
	BadStatus   int
	Values      map[string]string
	Persisted   string
}

// TestHostTuningThroughAgentInNetworkNamespace applies host tuning the way
// an operator does (PUT /api/v2/system/runtime/tuning on a control node,
// carried out by the enrolled agent), inside a network namespace this test
// makes with `unshare -n`: the net.* keys change and read back there, and
// the machine's own values stay as they were.
func TestHostTuningThroughAgentInNetworkNamespace(t *testing.T) {
	if report := os.Getenv(netnsReportEnv); report != "" {
		tuningInNamespace(t, report)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("unshare (util-linux) is required for this test")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("ip (iproute2) is required for this test")
	}
	bin := svcbin.Build(t)
	before := map[string]string{}
	for k := range tuningValues {
		before[k] = hosttuning.Read("/proc/sys", k)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(unshare, "-n", "sh", "-c", `ip link set lo up && exec "$0" -test.run='^TestHostTuningThroughAgentInNetworkNamespace$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), netnsReportEnv+"="+report, netnsBinaryEnv+"="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("namespace child: %v\n%s", err, tail(string(out), 6000))
	}
	var rep tuningReport
	raw, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(raw, &rep) != nil {
		t.Fatalf("no report from the child (%v):\n%s", err, tail(string(out), 6000))
	}
	if !rep.CanApply || rep.PlanChanges != len(tuningValues) || !rep.Applied || rep.CommandID == "" || rep.BadStatus != 400 {
		t.Fatalf("report %+v", rep)
	}
	for k, want := range tuningValues {
		if rep.Values[k] != want {
			t.Errorf("in the namespace %s = %q, want %q", k, rep.Values[k], want)
		}
		if got := hosttuning.Read("/proc/sys", k); got != before[k] {
			t.Errorf("the machine's %s moved from %q to %q", k, before[k], got)
		}
	}
	for k, v := range tuningValues {
		if !strings.Contains(rep.Persisted, k+" = "+v) {
			t.Errorf("persisted file lacks %s:\n%s", k, rep.Persisted)
		}
	}
}

// tuningInNamespace is the child: a control node and an agent on the
// namespace's own loopback.
func tuningInNamespace(t *testing.T, reportPath string) {
	cp := startControlNode(t, nil)
	en := cp.enroll("media-1", nil)
	dataDir := filepath.Join(t.TempDir(), "agent")
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := agent.Enroll(ctx, agent.EnrollOptions{Server: en.AgentServerUrl, Code: en.Code, CAHash: en.CaHash, DataDir: dataDir}); err != nil {
		t.Fatal(err)
	}
	o := agent.DefaultOptions()
	o.DataDir, o.EngineBinary, o.SysctlDir, o.HeartbeatInterval, o.PollWait = dataDir, os.Getenv(
		netnsBinaryEnv,
	), filepath.Join(
		dataDir,
		"sysctl.d",
	), 500*time.Millisecond, 5*time.Second
	o.EngineControlAddr, o.EngineHTTPAddr, o.EngineRTSPAddr = freeAddr(t), freeAddr(t), freeAddr(t)
	o.RTPPortMin = testkit.FreeRTPRange(t)
	o.RTPPortMax = o.RTPPortMin + 99
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); agent.Run(ctx, o, zaptest.NewLogger(t).Named("agent")) }()
	defer func() { cancel(); wg.Wait() }()
	testkit.Eventually(t, 30*time.Second, "agent online", func() bool { return cp.mediaServer("media-1").AgentStatus == "online" })

	var rep tuningReport
	var state struct {
		NodeId   string
		CanApply bool
	}
	cp.call("GET", "/api/v2/system/runtime/tuning", nil, &state)
	rep.CanApply = state.CanApply && state.NodeId == "media-1"
	var plan struct{ Changes int }
	cp.call("POST", "/api/v2/system/runtime/tuning/plan", map[string]any{"values": tuningValues}, &plan)
	rep.PlanChanges = plan.Changes
	var res struct {
		Applied   bool
		CommandId string
	}
	if st := cp.call("PUT", "/api/v2/system/runtime/tuning", map[string]any{"values": tuningValues, "reason": "e2e in a network namespace"}, &res); st != 200 {
		t.Fatalf("apply: %d", st)
	}
	rep.Applied, rep.CommandID = res.Applied, res.CommandId
	rep.BadStatus = cp.call("PUT", "/api/v2/system/runtime/tuning", map[string]any{"values": map[string]string{"kernel.panic": "1"}, "reason": "x"}, nil)
	rep.Values = map[string]string{}
	for k := range tuningValues {
		rep.Values[k] = hosttuning.Read("/proc/sys", k)
	}
	persisted, _ := os.ReadFile(filepath.Join(dataDir, "sysctl.d", hosttune.FileName))
	rep.Persisted = string(persisted)
	data, _ := json.Marshal(rep)
	if err := os.WriteFile(reportPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
