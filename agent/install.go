package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
)

// UnitName is the systemd unit `svc agent install` writes.
const UnitName = "svc-agent.service"

// ExitRetired is the exit status of an agent whose node was retired; the
// unit does not restart it.
const ExitRetired = 78

// InstallOptions are the flags of `svc agent install`.
type InstallOptions struct {
	Binary  string
	DataDir string
	UnitDir string
	// RunArgs are further `svc agent run` flags for the unit.
	RunArgs []string
	// Enable runs systemctl daemon-reload and enable --now.
	Enable bool
}

// The unit is hardened as far as the agent's work allows: it writes
// kernel parameters (so /proc/sys stays writable: no ProtectKernelTunables)
// and /etc/sysctl.d, binds the engine's ports and runs the engine as a
// child (NoNewPrivileges is fine: nothing gains privileges by exec).
var unitTemplate = template.Must(template.New("unit").Parse(`# Written by svc agent install.
[Unit]
Description=svc node agent (media host: engine supervision, node commands, RTP ports, host tuning)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart={{.Exec}}
Restart=always
RestartSec=2s
RestartPreventExitStatus={{.Retired}}
KillMode=control-group
TimeoutStopSec=30s
LimitNOFILE=1048576
NoNewPrivileges=yes
PrivateTmp=yes
ProtectHome=yes
ProtectSystem=full
ReadWritePaths={{.DataDir}} /etc/sysctl.d
ProtectKernelModules=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native
UMask=0077

[Install]
WantedBy=multi-user.target
`))

// quoteArg quotes one ExecStart word the way systemd reads it.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\$%;") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$", "%", "%%").Replace(s) + `"`
}

// Unit renders the systemd unit.
func Unit(o InstallOptions) ([]byte, error) {
	if !filepath.IsAbs(o.Binary) || !filepath.IsAbs(o.DataDir) {
		return nil, errors.New("the binary and the data directory must be absolute paths")
	}
	words := []string{o.Binary, "agent", "run", "--data-dir", o.DataDir}
	words = append(words, o.RunArgs...)
	for i, w := range words {
		words[i] = quoteArg(w)
	}
	var b bytes.Buffer
	err := unitTemplate.Execute(&b, map[string]any{"Exec": strings.Join(words, " "), "DataDir": quoteArg(o.DataDir), "Retired": ExitRetired})
	return b.Bytes(), err
}

// Install writes the unit and, when asked and systemd runs, enables and
// starts it. It returns the unit file's path.
func Install(o InstallOptions) (string, error) {
	data, err := Unit(o)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(o.DataDir, stateFile)); err != nil {
		return "", fmt.Errorf("%s holds no enrollment; run `svc agent enroll` first: %w", o.DataDir, err)
	}
	if err := os.MkdirAll(o.UnitDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(o.UnitDir, UnitName)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	if !o.Enable {
		return path, nil
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return path, errors.New("systemd is not running on this host; the unit is written but not enabled")
	}
	for _, args := range [][]string{{"daemon-reload"}, {"enable", "--now", UnitName}} {
		if out, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
			return path, fmt.Errorf("systemctl %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return path, nil
}
