package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnitPassesSystemdAnalyzeVerify writes the unit for an enrolled data
// directory and has systemd check it.
func TestUnitPassesSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze (Debian package systemd) is required for this test")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "agent data")
	os.MkdirAll(data, 0o700)
	os.WriteFile(filepath.Join(data, stateFile), []byte(`{"nodeId":"m1"}`), 0o600)
	bin := filepath.Join(dir, "svc")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	if _, err := Install(InstallOptions{Binary: bin, DataDir: filepath.Join(dir, "missing"), UnitDir: dir}); err == nil {
		t.Fatal("installed for a data directory without an enrollment")
	}
	path, err := Install(InstallOptions{Binary: bin, DataDir: data, UnitDir: dir, RunArgs: []string{"--log-level", "debug"}})
	if err != nil {
		t.Fatal(err)
	}
	unit, _ := os.ReadFile(path)
	for _, want := range []string{"Restart=always", "LimitNOFILE=", "NoNewPrivileges=yes", "RestartPreventExitStatus=78",
		`ExecStart=` + bin + ` agent run --data-dir "` + data + `" --log-level debug`} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || strings.Contains(string(out), UnitName) {
		t.Fatalf("systemd-analyze verify: %v\n%s\n%s", err, out, unit)
	}
	if _, err := Unit(InstallOptions{Binary: "svc", DataDir: data}); err == nil {
		t.Fatal("a relative binary path was accepted")
	}
}
