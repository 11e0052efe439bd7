package e2e

// The README test runs the README's command blocks as a reader would, one
// after the other in one shell, against a `svc dev` the test starts on
// ports of its own: every ```sh block must run as written on one machine,
// except the ones that say `# illustrative:` on their first line.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// block is one ```sh block of the README.
type block struct {
	line int // of the opening fence
	text string
}

// illustrative marks a block that cannot run on one machine (its first
// line says why).
const illustrative = "# illustrative:"

// shBlocks extracts the README's ```sh blocks in order.
func shBlocks(readme string) []block {
	var out []block
	var cur *block
	for i, l := range strings.Split(readme, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```sh":
			cur = &block{line: i + 1}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return out
}

// loopbackPort finds the ports the blocks use on loopback, as HOST:PORT
// or as a Python ("127.0.0.1", PORT) address.
var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:(\d{2,5})\b|"127\.0\.0\.1", (\d{2,5})\b`)

// rtpRange finds an engine configuration's RTP range.
var rtpRange = regexp.MustCompile(`(rtpPort(?:Min|Max)): (\d+)`)

// expectsError marks the comment line the README shows an error body in,
// right after the command that answers it.
var expectsError = regexp.MustCompile(`^\s*# \{"code":`)

// svcDevPorts are svc dev's default ports, which the README's commands
// talk to: API, raft, agent port, and its engine's media HTTP, RTSP,
// control API and WebRTC port.
var svcDevPorts = map[string]int{"http-addr": 8080, "raft-addr": 8300, "agent-addr": 8443,
	"engine-http-addr": 8088, "engine-rtsp-addr": 8554, "engine-control-addr": 8089, "engine-webrtc-addr": 8189}

// runnable rewrites a block for the test: the loopback ports the reader
// uses (svc dev's defaults among them) become free ones, RTP ranges move to
// free ones, /tmp/ becomes the test's own, and a command the README shows
// an error answer for is marked as expected to fail. Nothing else changes.
func runnable(text string, ports map[int]int, rtp func() int, tmp string) string {
	text = loopbackPort.ReplaceAllStringFunc(text, func(m string) string {
		sub := loopbackPort.FindStringSubmatch(m)
		p, _ := strconv.Atoi(sub[1] + sub[2])
		if sub[1] != "" {
			return "127.0.0.1:" + strconv.Itoa(ports[p])
		}
		return `"127.0.0.1", ` + strconv.Itoa(ports[p])
	})
	base := 0
	text = rtpRange.ReplaceAllStringFunc(text, func(m string) string {
		sub := rtpRange.FindStringSubmatch(m)
		if sub[1] == "rtpPortMin" || base == 0 {
			base = rtp()
		}
		if sub[1] == "rtpPortMin" {
			return sub[1] + ": " + strconv.Itoa(base)
		}
		return sub[1] + ": " + strconv.Itoa(base+99)
	})
	text = strings.ReplaceAll(text, "/tmp/", tmp+"/")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !expectsError.MatchString(l) {
			continue
		}
		// The command this answer belongs to starts after the last line
		// that is not a continuation.
		j := i - 1
		for j > 0 && strings.HasSuffix(strings.TrimSpace(lines[j-1]), `\`) {
			j--
		}
		if j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j]), "curl ") {
			lines[j] = "SVC_README_EXPECT_ERROR=1 " + lines[j]
		}
	}
	return strings.Join(lines, "\n")
}

// preamble is what every block runs under: errors stop the script; curl
// reports an HTTP status of 400 or more (or no answer) as a failure of the
// block, unless the README shows that error (SVC_README_EXPECT_ERROR) or
// the command checks the status itself (--fail); `make build` is the
// binary the test built.
const preamble = `set -e
curl() {
	local out own= rc=0
	for a in "$@"; do
		case $a in --fail|--fail-with-body|-[!-]*f*) own=1 ;; esac
	done
	{ out=$(command curl -w '%{stderr}%{http_code} %{method} %{url_effective}' "$@" 2>&1 1>&3 3>&-); } 3>&1 || rc=$?
	if [ -z "$own" ]; then
		case "$out" in
		2??\ *|3??\ *) [ -z "$SVC_README_EXPECT_ERROR" ] || echo "block $SVC_README_BLOCK: the README shows an error, got $out" >> "$SVC_README_FAILURES" ;;
		4??\ *) [ -n "$SVC_README_EXPECT_ERROR" ] || echo "block $SVC_README_BLOCK: HTTP $out" >> "$SVC_README_FAILURES" ;;
		*) echo "block $SVC_README_BLOCK: HTTP $out" >> "$SVC_README_FAILURES" ;;
		esac
	fi
	return $rc
}
make() {
	[ "$*" = build ] || { echo "the README test runs no make but make build" >&2; return 1; }
}
`

// TestReadmeCommandsRun runs every ```sh block of README.md, in order, in
// one shell, against a svc dev started here on free ports (the reader's
// `make run` in another terminal), and fails on a command that fails or an
// HTTP error the README does not show.
func TestReadmeCommandsRun(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "curl", "ffmpeg", "ffprobe", "python3", "sed", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required by the README's commands (scripts/install-deps.sh test): %v", tool, err)
		}
	}
	blocks := shBlocks(string(doc))
	var run []block
	for _, b := range blocks {
		if strings.HasPrefix(strings.TrimSpace(b.text), illustrative) {
			t.Logf("README.md:%d is illustrative: %s", b.line, strings.TrimSpace(strings.SplitN(strings.TrimSpace(b.text), "\n", 2)[0]))
			continue
		}
		run = append(run, b)
	}
	if len(run) < 6 {
		t.Fatalf("found only %d runnable command blocks in README.md", len(run))
	}

	// Every loopback port the README uses, and svc dev's, moves to a free
	// one, each to its own: a port free a moment ago can be handed out
	// twice, and two listeners on one port broke a run (a node's agent port
	// on svc dev's RTSP port).
	ports, taken := map[int]int{}, map[int]bool{}
	distinct := func() int {
		for {
			if p := freePort(t); !taken[p] {
				taken[p] = true
				return p
			}
		}
	}
	for _, p := range svcDevPorts {
		ports[p] = distinct()
	}
	for _, b := range run {
		for _, m := range loopbackPort.FindAllStringSubmatch(b.text, -1) {
			p, _ := strconv.Atoi(m[1] + m[2])
			if _, ok := ports[p]; !ok {
				ports[p] = distinct()
			}
		}
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.MkdirAll(filepath.Join(work, "bin"), 0o755)
	os.MkdirAll(tmp, 0o755)
	if err := os.Symlink(svcbin.Build(t), filepath.Join(work, "bin", "svc")); err != nil {
		t.Fatal(err)
	}

	startDev(t, work, ports)
	script := preamble
	for i, b := range run {
		script += fmt.Sprintf(
			"\n# README.md:%d\nSVC_README_BLOCK=%d\necho '=== README.md:%d'\n%s",
			b.line,
			i,
			b.line,
			runnable(b.text, ports, func() int { return testkit.FreeRTPRange(t) }, tmp),
		)
	}
	os.WriteFile(filepath.Join(work, "readme.sh"), []byte(script), 0o600)
	failures := filepath.Join(work, "failures")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(work, "readme.sh"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "SVC_README_FAILURES="+failures)
	// Its own process group: what the blocks leave running in the
	// background (an engine, cluster nodes, a receiver, an encoder) ends
	// with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	failed, _ := os.ReadFile(failures)
	if err != nil || len(failed) > 0 {
		t.Errorf("the README's commands failed: %v\n%s", err, failed)
		t.Logf("output:\n%s", tail(string(out), 6000))
	}
	// Every block ran to its end.
	for _, b := range run {
		if !strings.Contains(string(out), fmt.Sprintf("=== README.md:%d", b.line)) {
			t.Errorf("the block at README.md:%d did not run", b.line)
		}
	}
}

// startDev starts `svc dev` in work (data in work/.svc-dev, where the
// README's commands find its token) on the test's ports, and waits until
// the platform is as `make run` leaves it: the demo channel's stream
// Online.
func startDev(t *testing.T, work string, ports map[int]int) {
	t.Helper()
	args := []string{"dev", "--data-dir", filepath.Join(work, ".svc-dev")}
	names := make([]string, 0, len(svcDevPorts))
	for name := range svcDevPorts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		args = append(args, "--"+name, "127.0.0.1:"+strconv.Itoa(ports[svcDevPorts[name]]))
	}
	rtp := testkit.FreeRTPRange(t)
	args = append(args, "--engine-rtp-port-min", strconv.Itoa(rtp), "--engine-rtp-port-max", strconv.Itoa(rtp+99))
	startProcess(t, filepath.Join(work, "bin", "svc"), args...)
	api := "http://127.0.0.1:" + strconv.Itoa(ports[svcDevPorts["http-addr"]])
	deadline := time.Now().Add(90 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("svc dev's demo stream did not come Online within 90 s")
		}
		time.Sleep(500 * time.Millisecond)
		tok, err := os.ReadFile(filepath.Join(work, ".svc-dev", "dev-api-token"))
		if err != nil {
			continue
		}
		req, _ := http.NewRequest("GET", api+"/api/v2/third-party/streams?streamId=demo&state=Online", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		var list struct{ Total int }
		json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if list.Total == 1 {
			return
		}
	}
}

// TestRunnableRewritesOnlyPortsTmpAndExpectations keeps the rewrite of a
// block to what its doc comment promises.
func TestRunnableRewritesOnlyPortsTmpAndExpectations(t *testing.T) {
	in := `API=http://127.0.0.1:8080
curl -s $API/api/v2/system/info
# {"code":"authentication_required","message":"...","traceId":"..."}
curl -s -H 'X: y' \
  http://127.0.0.1:8089/api/v1/streams
# {"code":"unknown"}
HTTPServer(("127.0.0.1", 9000), R)
rtpPortMin: 31000
rtpPortMax: 31099
cat /tmp/engine.yaml
`
	want := `API=http://127.0.0.1:18080
SVC_README_EXPECT_ERROR=1 curl -s $API/api/v2/system/info
# {"code":"authentication_required","message":"...","traceId":"..."}
SVC_README_EXPECT_ERROR=1 curl -s -H 'X: y' \
  http://127.0.0.1:18089/api/v1/streams
# {"code":"unknown"}
HTTPServer(("127.0.0.1", 19000), R)
rtpPortMin: 45000
rtpPortMax: 45099
cat /scratch/tmp/engine.yaml
`
	got := runnable(in, map[int]int{8080: 18080, 8089: 18089, 9000: 19000}, func() int { return 45000 }, "/scratch/tmp")
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	addr := freeAddr(t)
	p, _ := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	return p
}
