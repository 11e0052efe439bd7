package supervisor

import (
	"bytes"
	"strings"
	"sync"
)

// maxLastLine bounds the line lastLine keeps.
const maxLastLine = 512

// lastLine is a writer that keeps the last complete line written to it
// that is not a JSON log record: the engine's fatal error ("svc: engine:
// ...") rather than its structured log.
type lastLine struct {
	mu      sync.Mutex
	partial []byte
	last    string
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data := append(l.partial, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(data[:i])); line != "" && !strings.HasPrefix(line, "{") {
			if len(line) > maxLastLine {
				line = line[:maxLastLine]
			}
			l.last = line
		}
		data = data[i+1:]
	}
	if len(data) > maxLastLine {
		data = data[len(data)-maxLastLine:]
	}
	l.partial = append(l.partial[:0], data...)
	return len(p), nil
}

// String is the last such line, or the unfinished one when none ended.
func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == "" {
		if line := strings.TrimSpace(string(l.partial)); !strings.HasPrefix(line, "{") {
			return line
		}
	}
	return l.last
}
