// Package hosttune applies the whitelisted host parameters on the media
// host: it writes kernel parameters under /proc/sys and the open-file
// limit, reads every value back to verify (restoring the old values when
// one does not stick), and persists them so a reboot or an agent restart
// keeps them: sysctls in a file under /etc/sysctl.d, the open-file limit in
// the agent's data directory.
package hosttune

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/agent/atomicfile"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/hosttuning"
)

// FileName is the sysctl file the agent owns in the sysctl directory.
const FileName = "90-svc-host-tuning.conf"

// Errors the command handlers map to agentapi codes.
var (
	ErrInvalid      = errors.New("invalid host tuning request")
	ErrNotPermitted = errors.New("host tuning cannot be applied here")
	ErrVerify       = errors.New("a value did not read back as written")
)

// Tuner applies host tuning.
type Tuner struct {
	// ProcRoot is /proc/sys.
	ProcRoot string
	// SysctlDir is /etc/sysctl.d.
	SysctlDir string
	// StateFile keeps the open-file limit for the next agent start.
	StateFile string
}

// CanApply reports whether this process may write kernel parameters and
// the sysctl directory, with the reason when it may not.
func (t *Tuner) CanApply() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "the node agent does not run as root"
	}
	if err := unix.Access(hosttuning.ProcPath(t.ProcRoot, "net.core.somaxconn"), unix.W_OK); err != nil {
		return false, fmt.Sprintf("%s is not writable (%v)", t.ProcRoot, err)
	}
	if err := os.MkdirAll(t.SysctlDir, 0o755); err != nil {
		return false, fmt.Sprintf("%s cannot be written (%v)", t.SysctlDir, err)
	}
	if err := unix.Access(t.SysctlDir, unix.W_OK); err != nil {
		return false, fmt.Sprintf("%s is not writable (%v)", t.SysctlDir, err)
	}
	return true, ""
}

func (t *Tuner) read(key string) string { return hosttuning.Read(t.ProcRoot, key) }

// State lists the whitelist with this host's values.
func (t *Tuner) State() agentapi.TuningState {
	ok, why := t.CanApply()
	st := agentapi.TuningState{CanApply: ok, ApplyUnavailableReason: why, Parameters: []agentapi.TuningParameter{}}
	for _, p := range hosttuning.Parameters() {
		st.Parameters = append(st.Parameters, agentapi.TuningParameter{Key: p.Key, Category: p.Category, CurrentValue: t.read(p.Key),
			RecommendedValue: p.Recommended, Description: p.Description})
	}
	return st
}

// Plan compares values with this host; it changes nothing.
func (t *Tuner) Plan(values map[string]string) (agentapi.TuningPlan, error) {
	items, changes, err := hosttuning.Plan(values, t.read)
	if err != nil {
		return agentapi.TuningPlan{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return agentapi.TuningPlan{Changes: changes, Items: items}, nil
}

// Apply writes the values, verifies them by reading back and persists
// them. When a value does not read back as written, every value this call
// changed is put back and ErrVerify returned.
func (t *Tuner) Apply(values map[string]string) (agentapi.TuningApplyResult, error) {
	items, _, err := hosttuning.Plan(values, t.read)
	if err != nil {
		return agentapi.TuningApplyResult{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := hosttuning.FirstInvalid(items); err != nil {
		return agentapi.TuningApplyResult{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if ok, why := t.CanApply(); !ok {
		return agentapi.TuningApplyResult{}, fmt.Errorf("%w: %s", ErrNotPermitted, why)
	}
	var written []hosttuning.Item
	rollback := func() {
		for i := len(written) - 1; i >= 0; i-- {
			t.write(written[i].Key, written[i].CurrentValue)
		}
	}
	for _, it := range items {
		if !it.Changed {
			continue
		}
		if err := t.write(it.Key, it.DesiredValue); err != nil {
			rollback()
			return agentapi.TuningApplyResult{}, fmt.Errorf("%w: writing %s: %w", ErrNotPermitted, it.Key, err)
		}
		written = append(written, it)
	}
	for i, it := range items {
		got := t.read(it.Key)
		if got != it.DesiredValue {
			rollback()
			return agentapi.TuningApplyResult{}, fmt.Errorf("%w: %s reads %q after writing %q; the previous values were restored", ErrVerify, it.Key, got, it.DesiredValue)
		}
		items[i].CurrentValue, items[i].Message = got, "applied and verified"
	}
	file, err := t.persist(values)
	if err != nil {
		return agentapi.TuningApplyResult{}, fmt.Errorf("values applied but not persisted: %w", err)
	}
	return agentapi.TuningApplyResult{Applied: true, Items: items, PersistedFile: file}, nil
}

// write sets one parameter on the running host.
func (t *Tuner) write(key, value string) error {
	if key == hosttuning.NoFileKey {
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return err
		}
		var r syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			return err
		}
		r.Cur, r.Max = n, max(r.Max, n)
		// Processes the agent starts from now on (the engine) inherit it.
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	}
	return os.WriteFile(hosttuning.ProcPath(t.ProcRoot, key), []byte(value+"\n"), 0o644)
}

// persist merges the sysctl values into the agent's sysctl file and the
// open-file limit into the state file.
func (t *Tuner) persist(values map[string]string) (string, error) {
	path := filepath.Join(t.SysctlDir, FileName)
	current := map[string]string{}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.HasPrefix(line, "#") {
				continue
			}
			k = strings.TrimSpace(k)
			if hosttuning.Find(k) != nil && k != hosttuning.NoFileKey {
				current[k] = hosttuning.Normalize(v)
			}
		}
		f.Close()
	}
	for k, v := range values {
		if k == hosttuning.NoFileKey {
			if err := t.saveNoFile(hosttuning.Normalize(v)); err != nil {
				return "", err
			}
			continue
		}
		current[k] = hosttuning.Normalize(v)
	}
	keys := make([]string, 0, len(current))
	for k := range current {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by the svc node agent (host tuning); changes here are overwritten.\n# Last change: %s\n", time.Now().UTC().Format(time.RFC3339))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, current[k])
	}
	if err := os.MkdirAll(t.SysctlDir, 0o755); err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, b.Bytes(), 0o644, true)
}

type savedState struct {
	NoFile string `json:"processNofile"`
}

func (t *Tuner) saveNoFile(v string) error {
	data, _ := json.Marshal(savedState{NoFile: v})
	return atomicfile.Write(t.StateFile, data, 0o600, true)
}

// Restore applies the persisted open-file limit at agent start, before
// the engine is started.
func (t *Tuner) Restore() error {
	raw, err := os.ReadFile(t.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st savedState
	if err := json.Unmarshal(raw, &st); err != nil || st.NoFile == "" {
		return err
	}
	return t.write(hosttuning.NoFileKey, st.NoFile)
}
