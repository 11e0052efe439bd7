// Package benchdoc is what the benchmark programs share to report: the
// machine they ran on and their section of docs/benchmarks.md, delimited by
// markers so each program rewrites only its own.
package benchdoc

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
)

// Machine names the CPU, its cores and the Go version.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindStringSubmatch(string(b)); m != nil {
			model = strings.TrimSpace(m[1])
		}
	}
	return fmt.Sprintf("%s, %d cores, %s", model, runtime.NumCPU(), runtime.Version())
}

// WriteSection replaces the section between <!-- name:begin --> and
// <!-- name:end --> in path, or appends it.
func WriteSection(path, name, section string) error {
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	body := begin + "\n" + section + end + "\n"
	old, _ := os.ReadFile(path)
	s := string(old)
	if i, j := strings.Index(s, begin), strings.Index(s, end); i >= 0 && j > i {
		s = s[:i] + body + s[j+len(end)+1:]
	} else {
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s += "\n"
		}
		s += body
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
