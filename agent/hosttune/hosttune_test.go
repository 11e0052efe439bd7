package hosttune

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/svc/shared/hosttuning"
)

// The netns child: this test binary re-run inside a network namespace it
// does not share with the machine, where net.* keys are its own.
const childEnv = "SVC_HOSTTUNE_NETNS_CHILD"

var netnsValues = map[string]string{
	"net.core.somaxconn":             "2048",
	"net.ipv4.ip_local_port_range":   "20000 40000",
	"net.ipv4.tcp_fin_timeout":       "17",
	"net.ipv4.tcp_tw_reuse":          "1",
	"net.ipv6.conf.all.disable_ipv6": "1",
}

type childReport struct {
	Before, After map[string]string
	PlanChanges   int
	File          string
	Err           string
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(netnsChild())
	}
	os.Exit(m.Run())
}

func netnsChild() int {
	dir := os.Getenv(childEnv)
	t := &Tuner{ProcRoot: "/proc/sys", SysctlDir: filepath.Join(dir, "sysctl.d"), StateFile: filepath.Join(dir, "tuning.json")}
	rep := childReport{Before: map[string]string{}, After: map[string]string{}}
	for k := range netnsValues {
		rep.Before[k] = t.read(k)
	}
	plan, err := t.Plan(netnsValues)
	if err == nil {
		rep.PlanChanges = plan.Changes
		r, aerr := t.Apply(netnsValues)
		err, rep.File = aerr, r.PersistedFile
	}
	if err != nil {
		rep.Err = err.Error()
	}
	for k := range netnsValues {
		rep.After[k] = t.read(k)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// TestApplyInNetworkNamespace applies net.* keys for real inside a network
// namespace made by `unshare -n`: they change and read back there, are
// persisted, and the machine's own values do not move.
func TestApplyInNetworkNamespace(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("unshare (util-linux) is required for this test")
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root to make a network namespace and write /proc/sys there")
	}
	hostBefore := map[string]string{}
	for k := range netnsValues {
		hostBefore[k] = hosttuning.Read("/proc/sys", k)
	}
	dir := t.TempDir()
	cmd := exec.Command(unshare, "-n", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("netns child: %v %s", err, out)
	}
	var rep childReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	if rep.Err != "" {
		t.Fatalf("apply in netns: %s", rep.Err)
	}
	if rep.PlanChanges == 0 {
		t.Fatalf("plan found nothing to change: %+v", rep)
	}
	for k, want := range netnsValues {
		if rep.After[k] != want {
			t.Errorf("%s = %q in the namespace, want %q", k, rep.After[k], want)
		}
		if got := hosttuning.Read("/proc/sys", k); got != hostBefore[k] {
			t.Errorf("the machine's %s changed from %q to %q", k, hostBefore[k], got)
		}
	}
	file, _ := os.ReadFile(filepath.Join(dir, "sysctl.d", FileName))
	for k, v := range netnsValues {
		if !strings.Contains(string(file), k+" = "+v+"\n") {
			t.Errorf("persisted file lacks %s = %s:\n%s", k, v, file)
		}
	}
	if rep.File != filepath.Join(dir, "sysctl.d", FileName) {
		t.Errorf("persisted to %q", rep.File)
	}
}

func TestRefusals(t *testing.T) {
	tu := &Tuner{ProcRoot: "/proc/sys", SysctlDir: t.TempDir(), StateFile: filepath.Join(t.TempDir(), "s.json")}
	for _, v := range []map[string]string{{"kernel.panic": "1"}, {"net.core.somaxconn": "1"}, {}} {
		if _, err := tu.Apply(v); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v: %v", v, err)
		}
	}
	// A value the kernel does not keep is rolled back: a read-only
	// /proc tree stands in for a kernel that refuses the write.
	ro := t.TempDir()
	os.MkdirAll(filepath.Join(ro, "net/core"), 0o755)
	os.WriteFile(filepath.Join(ro, "net/core/somaxconn"), []byte("4096\n"), 0o444)
	tu.ProcRoot = ro
	if os.Geteuid() == 0 {
		// root writes through 0444; the verify step is what must catch a
		// refused value, so make the path a directory write cannot replace.
		os.Remove(filepath.Join(ro, "net/core/somaxconn"))
		os.MkdirAll(filepath.Join(ro, "net/core/somaxconn"), 0o755)
	}
	if _, err := tu.Apply(map[string]string{"net.core.somaxconn": "8192"}); err == nil {
		t.Fatal("a value that cannot be written was reported applied")
	}
}
