// Package svcbin builds the svc binary for tests that run its roles as
// real processes (the agent, the engine). The build is cached by the Go
// build cache, so every package after the first pays little.
package svcbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Build returns the path of a freshly built svc binary, shared by the
// tests of one package; it fails the test when the build fails.
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		// Next to the test binary: `go test` removes that directory when the
		// package's tests end.
		var exe string
		if exe, err = os.Executable(); err != nil {
			return
		}
		path = filepath.Join(filepath.Dir(exe), "svc")
		cmd := exec.Command("go", "build", "-o", path, "github.com/svcplatform/svc/cmd/svc")
		cmd.Dir = moduleRoot()
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("building svc: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	return path
}

// moduleRoot is the directory of go.mod, found from this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
