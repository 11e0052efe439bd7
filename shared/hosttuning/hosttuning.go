// Package hosttuning is the whitelist of Linux host parameters the platform
// may read and change on a media host, with their validation and the plan
// (current against desired values). The control plane validates and
// previews with it; the node agent applies, persists and verifies. Keys off
// the whitelist are refused everywhere.
package hosttuning

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Categories of parameters (the contract's HostTuningParameter.category).
const (
	CategoryFileHandles = "file-handles"
	CategoryNetwork     = "network"
	CategoryTCP         = "tcp"
	CategoryIPv6        = "ipv6"
)

// NoFileKey is the open-file limit of the media processes; it is a
// resource limit, not a sysctl, and is applied to the agent and the engine
// it starts.
const NoFileKey = "process.nofile"

// Errors of a tuning request.
var (
	ErrNotWhitelisted = errors.New("not on the host tuning whitelist")
	ErrNoValues       = errors.New("values must name at least one parameter")
)

// Parameter is one whitelisted host parameter.
type Parameter struct {
	Key, Description, Recommended, Category string
	valid                                   func(string) error
}

// Validate checks a (normalized) value for the parameter.
func (p Parameter) Validate(v string) error { return p.valid(v) }

func intRange(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer in %d..%d", lo, hi)
		}
		return nil
	}
}

var portRangeRe = regexp.MustCompile(`^(\d+) (\d+)$`)

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

var parameters = []Parameter{
	{"fs.file-max", "system-wide open file limit", "2097152", CategoryFileHandles, intRange(65536, 1<<40)},
	{NoFileKey, "open-file limit (RLIMIT_NOFILE) of the media processes", "1048576", CategoryFileHandles, intRange(1024, 1<<24)},
	{"net.core.somaxconn", "listen backlog limit", "65535", CategoryNetwork, intRange(128, 1<<20)},
	{"net.core.rmem_max", "largest socket receive buffer (RTP bursts)", "33554432", CategoryNetwork, intRange(212992, 1<<30)},
	{"net.core.wmem_max", "largest socket send buffer (many players)", "33554432", CategoryNetwork, intRange(212992, 1<<30)},
	{"net.ipv4.ip_local_port_range", "ephemeral ports for outgoing connections", "10000 65000", CategoryNetwork, portRange},
	{"net.ipv4.tcp_tw_reuse", "reuse TIME_WAIT sockets for new outgoing connections", "1", CategoryTCP, intRange(0, 2)},
	{"net.ipv4.tcp_fin_timeout", "seconds an orphaned connection stays in FIN-WAIT-2", "15", CategoryTCP, intRange(5, 120)},
	{"net.ipv4.tcp_max_syn_backlog", "half-open connection queue", "65535", CategoryTCP, intRange(128, 1<<20)},
	{"net.ipv6.conf.all.disable_ipv6", "1 disables IPv6 on all interfaces", "0", CategoryIPv6, intRange(0, 1)},
}

// Parameters lists the whitelist in a stable order.
func Parameters() []Parameter { return append([]Parameter(nil), parameters...) }

// Find returns the whitelisted parameter of key, or nil.
func Find(key string) *Parameter {
	for i := range parameters {
		if parameters[i].Key == key {
			return &parameters[i]
		}
	}
	return nil
}

// Normalize folds whitespace the way /proc/sys prints values.
func Normalize(v string) string { return strings.Join(strings.Fields(v), " ") }

// ProcPath is the /proc/sys file of a sysctl key under procRoot
// (normally /proc/sys).
func ProcPath(procRoot, key string) string {
	return filepath.Join(procRoot, strings.ReplaceAll(key, ".", "/"))
}

// Read returns a parameter's current value on this host ("" when it cannot
// be read, for example net.core.rmem_max inside a network namespace).
func Read(procRoot, key string) string {
	if key == NoFileKey {
		var r syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			return ""
		}
		return strconv.FormatUint(r.Cur, 10)
	}
	data, err := os.ReadFile(ProcPath(procRoot, key))
	if err != nil {
		return ""
	}
	return Normalize(string(data))
}

// Item is the difference between the current and the desired value of
// one key (the contract's HostTuningDiffItem).
type Item struct {
	Key          string `json:"key"`
	CurrentValue string `json:"currentValue"`
	DesiredValue string `json:"desiredValue"`
	Changed      bool   `json:"changed"`
	Valid        bool   `json:"valid"`
	Message      string `json:"message"`
}

// Plan compares desired values with current ones. It fails only for an
// empty request or a key off the whitelist; an invalid value is reported
// per item.
func Plan(values map[string]string, current func(key string) string) ([]Item, int, error) {
	if len(values) == 0 {
		return nil, 0, ErrNoValues
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := make([]Item, 0, len(keys))
	changes := 0
	for _, k := range keys {
		p := Find(k)
		if p == nil {
			return nil, 0, fmt.Errorf("%w: %q", ErrNotWhitelisted, k)
		}
		want := Normalize(values[k])
		it := Item{Key: k, CurrentValue: current(k), DesiredValue: want, Valid: true, Message: "unchanged"}
		if err := p.Validate(want); err != nil {
			it.Valid, it.Message = false, err.Error()
		} else if it.CurrentValue != want {
			it.Changed, it.Message = true, "will change"
			changes++
		}
		items = append(items, it)
	}
	return items, changes, nil
}

// FirstInvalid returns an error naming the first invalid item, if any.
func FirstInvalid(items []Item) error {
	for _, it := range items {
		if !it.Valid {
			return fmt.Errorf("%s: %s", it.Key, it.Message)
		}
	}
	return nil
}
