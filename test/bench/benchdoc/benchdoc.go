// Package benchdoc is what the benchmark programs under test/bench share:
// a description of the machine, and replacing a program's own section of
// docs/benchmarks.md between its begin and end markers.
package benchdoc

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Machine describes the CPU, cores, OS and Go version.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores, %s/%s, %s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// WriteSection puts section into the file at path between the markers
// "<!-- name:begin -->" and "<!-- name:end -->", replacing what was there
// or appending it.
func WriteSection(path, name, section string) error {
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	body := begin + "\n" + section + end + "\n"
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(old)
	if i, j := strings.Index(s, begin), strings.Index(s, end); i >= 0 && j > i {
		s = s[:i] + body + strings.TrimPrefix(s[j+len(end):], "\n")
	} else {
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s += "\n"
		}
		s += body
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
