// Package benchdoc is what the benchmark programs share to report: each
// owns one marked section of docs/benchmarks.md and names the machine its
// numbers come from.
package benchdoc

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
)

// WriteSection replaces the section between `<!-- name:begin -->` and
// `<!-- name:end -->` in the file at path, or appends it, leaving the other
// benchmarks' sections as they are.
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

// Machine names the CPU model, the core count and the Go version.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindStringSubmatch(string(b)); m != nil {
			model = strings.TrimSpace(m[1])
		}
	}
	return fmt.Sprintf("%s, %d cores, %s", model, runtime.NumCPU(), runtime.Version())
}
