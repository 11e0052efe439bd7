package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	tracePTZCmd = regexp.MustCompile(`<PTZCmd>([0-9A-F]{16})</PTZCmd>`)
	traceCallID = regexp.MustCompile(`(?mi)^(?:Call-ID|i):\s*(\S+)`)
	traceCSeq   = regexp.MustCompile(`(?mi)^CSeq:\s*([^\r\n]+)`)
)

// ptzCmdsAtCamera returns the PTZCmds of the MESSAGEs a SIPp camera started
// by startSIPpCamera in dir received, in the order it received them and
// once per transaction (a retransmission is not a second command). It reads
// SIPp's message trace, which SIPp writes as each message arrives; files
// appended to by a scenario's exec actions are not in order, because SIPp
// runs each exec in its own shell without waiting for it.
func ptzCmdsAtCamera(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "messages.log"))
	seen := map[string]bool{}
	var cmds []string
	for _, entry := range strings.Split(string(b), "\n----------------------------------------------- ") {
		_, msg, ok := strings.Cut(entry, "message received [")
		if !ok {
			continue
		}
		_, msg, _ = strings.Cut(msg, "\n")
		msg = strings.TrimLeft(msg, "\r\n")
		cmd := tracePTZCmd.FindStringSubmatch(msg)
		if !strings.HasPrefix(msg, "MESSAGE ") || cmd == nil {
			continue
		}
		var key string
		if m := traceCallID.FindStringSubmatch(msg); m != nil {
			key = m[1]
		}
		if m := traceCSeq.FindStringSubmatch(msg); m != nil {
			key += " " + strings.TrimSpace(m[1])
		}
		if !seen[key] {
			seen[key] = true
			cmds = append(cmds, cmd[1])
		}
	}
	return cmds
}
