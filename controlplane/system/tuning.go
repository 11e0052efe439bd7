package system

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/svcplatform/svc/api/contract"
)

// tunable is one whitelisted host parameter.
type tunable struct {
	key, description, recommended string
	category                      contract.HostTuningParameterCategory
	valid                         func(string) error
}

func intRange(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer in %d..%d", lo, hi)
		}
		return nil
	}
}

var portRangeRe = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s*$`)

func portRange(v string) error {
	m := portRangeRe.FindStringSubmatch(v)
	if m == nil {
		return fmt.Errorf(`must be "LOW HIGH"`)
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	if lo < 1024 || hi > 65535 || lo >= hi {
		return fmt.Errorf("must satisfy 1024 <= LOW < HIGH <= 65535")
	}
	return nil
}

// Tunables is the whitelist; anything else is refused.
var tunables = []tunable{
	{"fs.file-max", "system-wide open file limit", "2097152", contract.HostTuningParameterCategoryFileHandles, intRange(65536, 1<<40)},
	{"process.nofile", "open-file limit (RLIMIT_NOFILE) of the media processes", "1048576", contract.HostTuningParameterCategoryFileHandles, intRange(1024, 1<<24)},
	{"net.core.somaxconn", "listen backlog limit", "65535", contract.HostTuningParameterCategoryNetwork, intRange(128, 1<<20)},
	{"net.core.rmem_max", "largest socket receive buffer (RTP bursts)", "33554432", contract.HostTuningParameterCategoryNetwork, intRange(212992, 1<<30)},
	{"net.core.wmem_max", "largest socket send buffer (many players)", "33554432", contract.HostTuningParameterCategoryNetwork, intRange(212992, 1<<30)},
	{"net.ipv4.ip_local_port_range", "ephemeral ports for outgoing connections", "10000 65000", contract.HostTuningParameterCategoryNetwork, portRange},
	{"net.ipv4.tcp_tw_reuse", "reuse TIME_WAIT sockets for new outgoing connections", "1", contract.HostTuningParameterCategoryTcp, intRange(0, 2)},
	{"net.ipv4.tcp_fin_timeout", "seconds an orphaned connection stays in FIN-WAIT-2", "15", contract.HostTuningParameterCategoryTcp, intRange(5, 120)},
	{"net.ipv4.tcp_max_syn_backlog", "half-open connection queue", "65535", contract.HostTuningParameterCategoryTcp, intRange(128, 1<<20)},
	{"net.ipv6.conf.all.disable_ipv6", "1 disables IPv6 on all interfaces", "0", contract.HostTuningParameterCategoryIpv6, intRange(0, 1)},
}

func findTunable(key string) *tunable {
	for i := range tunables {
		if tunables[i].key == key {
			return &tunables[i]
		}
	}
	return nil
}

// currentValue reads a parameter on this host.
func currentValue(key string) string {
	if key == "process.nofile" {
		var r syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			return ""
		}
		return strconv.FormatUint(r.Cur, 10)
	}
	data, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/")))
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(data)), " ")
}

const agentUnavailable = "no node agent is enrolled on this cluster yet; host tuning is applied and verified by the node agent of the media host"

// Tuning shows the whitelist with this host's current values.
func (s *Service) Tuning() contract.HostTuningState {
	out := contract.HostTuningState{NodeId: s.d.NodeID, CanApply: false, ApplyUnavailableReason: agentUnavailable, Parameters: []contract.HostTuningParameter{}}
	for _, t := range tunables {
		out.Parameters = append(out.Parameters, contract.HostTuningParameter{Key: t.key, Category: t.category, CurrentValue: currentValue(t.key), RecommendedValue: t.recommended, Description: t.description})
	}
	return out
}

// TuningPlan shows what applying values would change; it writes nothing.
func (s *Service) TuningPlan(nodeID *string, values map[string]string) (contract.HostTuningPlan, error) {
	if nodeID != nil && *nodeID != "" && *nodeID != s.d.NodeID {
		return contract.HostTuningPlan{}, fmt.Errorf("%w: node %q has no enrolled agent", ErrAgentUnavailable, *nodeID)
	}
	plan := contract.HostTuningPlan{NodeId: s.d.NodeID, Items: []contract.HostTuningDiffItem{}}
	if len(values) == 0 {
		return plan, fmt.Errorf("%w: values must name at least one parameter", ErrInvalidTuning)
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t := findTunable(k)
		if t == nil {
			return plan, fmt.Errorf("%w: %q is not on the host tuning whitelist", ErrInvalidTuning, k)
		}
		want := strings.Join(strings.Fields(values[k]), " ")
		item := contract.HostTuningDiffItem{Key: k, CurrentValue: currentValue(k), DesiredValue: want, Valid: true, Message: "unchanged"}
		if err := t.valid(want); err != nil {
			item.Valid, item.Message = false, err.Error()
		} else if item.CurrentValue != want {
			item.Changed, item.Message = true, "will change"
			plan.Changes++
		}
		plan.Items = append(plan.Items, item)
	}
	return plan, nil
}

// ApplyTuning applies through the node agent; until an agent is enrolled it
// is refused with the reason, after validating the request.
func (s *Service) ApplyTuning(nodeID *string, values map[string]string) (contract.HostTuningApplyResult, error) {
	plan, err := s.TuningPlan(nodeID, values)
	if err != nil {
		return contract.HostTuningApplyResult{}, err
	}
	for _, it := range plan.Items {
		if !it.Valid {
			return contract.HostTuningApplyResult{}, fmt.Errorf("%w: %s: %s", ErrInvalidTuning, it.Key, it.Message)
		}
	}
	return contract.HostTuningApplyResult{}, fmt.Errorf("%w: %s", ErrAgentUnavailable, agentUnavailable)
}
