package benchdoc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// Stop interrupts a started process and waits for it, killing it when it
// has not ended within 10 s.
func Stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// CPUSeconds is a process's user+system CPU time so far (0 when it cannot
// be read).
func CPUSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// WriteEngineConfig writes cfg as engine.yaml in dir, for `svc engine
// --config`, and answers the file's path.
func WriteEngineConfig(dir string, cfg engineapi.Config) (string, error) {
	b, err := cfg.Marshal()
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "engine.yaml")
	return file, os.WriteFile(file, b, 0o600)
}
