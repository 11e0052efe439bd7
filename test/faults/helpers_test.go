package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// inNamespace marks the re-run of the test binary inside its own mount
// namespace.
const inNamespace = "SVC_FAULTS_MOUNT_NS"

// TestMain re-runs the tests in a private mount namespace, where they may
// mount tmpfs volumes that no other process sees.
func TestMain(m *testing.M) {
	if os.Getenv(inNamespace) == "1" {
		os.Exit(m.Run())
	}
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", os.Args[0]}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), inNamespace+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	}
	fmt.Fprintln(os.Stderr, "faults: cannot run the tests in a private mount namespace (unshare --mount, as root):", err)
	os.Exit(1)
}

// soak reports whether the long variant runs (make soak).
func soak() bool { return os.Getenv("SVC_SOAK") == "1" }

// rounds is n normally and soakN under make soak.
func rounds(n, soakN int) int {
	if soak() {
		return soakN
	}
	return n
}

// tmpfs mounts a tmpfs of sizeMiB on a new directory and returns it; it is
// unmounted when the test ends (after the processes using it stopped,
// since cleanups run last-registered first).
func tmpfs(t *testing.T, sizeMiB int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=0700", sizeMiB)); err != nil {
		t.Fatalf("mount a %d MiB tmpfs (the tests need root): %v", sizeMiB, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// freeBytes is the free space of dir's filesystem.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill writes a file in dir until the filesystem has at most leave bytes
// free (leave 0: until it is full) and returns the file.
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("f"), 64<<10)
	for {
		free := freeBytes(t, dir)
		if free <= leave {
			break
		}
		n := int64(len(chunk))
		if free-leave < n {
			n = free - leave
		}
		if _, err := f.Write(chunk[:n]); err != nil {
			break // full
		}
	}
	f.Sync()
	return f.Name()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// node is one `svc server` process and what it needs to start again on
// the same data.
type node struct {
	t        *testing.T
	id       string
	dataDir  string
	http     string
	args     []string
	logPath  string
	cmd      *exec.Cmd
	done     chan struct{}
	exitErr  error
	startedN int
}

func (n *node) url() string { return "http://" + n.http }

// start runs the process; it does not wait for it to serve.
func (n *node) start() {
	n.t.Helper()
	n.startedN++
	out, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		n.t.Fatal(err)
	}
	fmt.Fprintf(out, "\n===== start %d: svc %s\n", n.startedN, strings.Join(n.args, " "))
	n.cmd = exec.Command(svcbin.Build(n.t), n.args...)
	n.cmd.Stdout, n.cmd.Stderr = out, out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		out.Close()
		n.t.Fatal(err)
	}
	done := make(chan struct{})
	n.done = done
	go func() {
		n.exitErr = n.cmd.Wait()
		out.Close()
		close(done)
	}()
}

// running reports whether the process has not exited.
func (n *node) running() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// kill stops the process with SIGKILL, as a crash or a power cut would.
func (n *node) kill() {
	n.signal(syscall.SIGKILL)
	<-n.done
}

// stop asks the process to shut down (SIGTERM) and waits for it.
func (n *node) stop() {
	n.t.Helper()
	n.signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		n.kill()
		n.t.Fatalf("%s did not stop within 30s of SIGTERM", n.id)
	}
}

func (n *node) signal(sig syscall.Signal) {
	if n.cmd != nil && n.cmd.Process != nil && n.running() {
		n.cmd.Process.Signal(sig)
	}
}

// log is the process output so far.
func (n *node) log() string {
	b, _ := os.ReadFile(n.logPath)
	return string(b)
}

// cluster is a set of nodes sharing one cluster key, and an operator token.
type cluster struct {
	t     *testing.T
	nodes []*node
	key   string
	token string
	extra []string
}

// newCluster starts size nodes: the first founds the cluster, the others
// join through it. dataDir gives each node's data directory (nil: a fresh
// temporary one); extra flags go to every node.
func newCluster(t *testing.T, size int, dataDir func(i int) string, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, key: filepath.Join(t.TempDir(), "cluster.key"), extra: extra}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.running() {
				n.kill()
			}
		}
		if t.Failed() {
			for _, n := range c.nodes {
				t.Logf("---- log of %s (%s):\n%s", n.id, n.logPath, tail(n.log(), 12000))
			}
		}
	})
	for i := 0; i < size; i++ {
		dir := ""
		if dataDir != nil {
			dir = dataDir(i)
		}
		if dir == "" {
			dir = filepath.Join(t.TempDir(), "data")
		}
		n := c.add(fmt.Sprintf("n%d", i+1), dir, i > 0)
		n.start()
		c.waitServing(n)
		if i == 0 {
			c.token = c.adminToken(n)
		}
	}
	return c
}

// add prepares a node; join makes it join through the first node.
func (c *cluster) add(id, dataDir string, join bool) *node {
	logDir := c.t.TempDir()
	if keep := os.Getenv("SVC_FAULTS_LOGS"); keep != "" {
		// Keep the logs after the test (for looking into a failure).
		logDir = filepath.Join(keep, strings.ReplaceAll(c.t.Name(), "/", "_"))
		os.MkdirAll(logDir, 0o755)
	}
	n := &node{t: c.t, id: id, dataDir: dataDir, http: freeAddr(c.t), logPath: filepath.Join(logDir, id+".log")}
	n.args = []string{"server", "--node-id", id, "--data-dir", dataDir, "--http-addr", n.http, "--raft-addr", freeAddr(c.t),
		"--agent-addr", freeAddr(c.t), "--cluster-key-file", c.key, "--shutdown-grace", "3s", "--log-level", "info"}
	if join {
		n.args = append(n.args, "--join", c.nodes[0].url())
	}
	n.args = append(n.args, c.extra...)
	c.nodes = append(c.nodes, n)
	return n
}

// waitServing waits until the node's API answers.
func (c *cluster) waitServing(n *node) {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if !n.running() {
			c.t.Fatalf("%s exited while starting: %v\n%s", n.id, n.exitErr, tail(n.log(), 6000))
		}
		if st, _, _ := do(n.url(), "", "GET", "/health", nil, nil); st == 200 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s does not serve within 90s\n%s", n.id, tail(n.log(), 6000))
}

const adminPassword = "correct horse battery staple"

// adminToken bootstraps the first administrator from loopback, logs in and
// creates an API token with every permission, all through the public API.
func (c *cluster) adminToken(n *node) string {
	c.t.Helper()
	if st, _, body := do(n.url(), "", "POST", "/api/v2/auth/bootstrap", map[string]string{"username": "admin", "password": adminPassword}, nil); st != 200 {
		c.t.Fatalf("bootstrap: %d %s", st, body)
	}
	st, h, body := do(n.url(), "", "POST", "/api/v2/auth/login", map[string]string{"username": "admin", "password": adminPassword}, nil)
	if st != 200 {
		c.t.Fatalf("login: %d %s", st, body)
	}
	var session struct {
		CsrfToken string `json:"csrfToken"`
	}
	json.Unmarshal(body, &session)
	var cookies []string
	for _, ck := range (&http.Response{Header: h}).Cookies() {
		cookies = append(cookies, ck.Name+"="+ck.Value)
	}
	st, _, body = do(n.url(), "", "POST", "/api/v2/security/api-tokens", map[string]any{"name": "fault suite", "permissions": []string{"*"}},
		map[string]string{"X-Svc-Csrf-Token": session.CsrfToken, "Cookie": strings.Join(cookies, "; ")})
	if st != 200 {
		c.t.Fatalf("create API token: %d %s", st, body)
	}
	var tok struct {
		Token string `json:"token"`
	}
	json.Unmarshal(body, &tok)
	return tok.Token
}

var client = &http.Client{Timeout: 30 * time.Second}

// do sends one request and returns the status, the headers and the body;
// a transport error is status 0 with the error text as body.
func do(base, token, method, path string, body any, header map[string]string) (int, http.Header, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// errorBody is the contract's error answer.
type errorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	TraceID   string `json:"traceId"`
	Retryable *bool  `json:"retryable"`
}

func decodeError(t *testing.T, body []byte) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Code == "" || e.TraceID == "" {
		t.Fatalf("not the contract's error body: %s", body)
	}
	return e
}

// channel is what the tests read back of a channel.
type channel struct {
	ChannelID string `json:"channelId"`
	Name      string `json:"name"`
	Stream    string `json:"stream"`
}

// createChannel creates a channel through n; it returns the status, the
// channel (on 200) and the body.
func (c *cluster) createChannel(n *node, stream string) (int, channel, []byte) {
	st, _, body := do(n.url(), c.token, "POST", "/api/v2/channels", map[string]any{
		"name": "fault " + stream, "protocol": "rtsp", "app": "faults", "stream": stream, "sourceUrl": "rtsp://192.0.2.1:554/" + stream}, nil)
	var ch channel
	if st == 200 {
		json.Unmarshal(body, &ch)
	}
	return st, ch, body
}

// getChannel reads a channel through n.
func (c *cluster) getChannel(n *node, id string, header map[string]string) (int, http.Header, channel) {
	st, h, body := do(n.url(), c.token, "GET", "/api/v2/channels/"+id, nil, header)
	var ch channel
	if st == 200 {
		json.Unmarshal(body, &ch)
	}
	return st, h, ch
}

// health is the public health snapshot of n with the operator's details.
type health struct {
	Status  string `json:"status"`
	Details *struct {
		LeaderID string `json:"leaderId"`
		Revision int64  `json:"revision"`
		Checks   []struct {
			Name, Status, Message string
		} `json:"checks"`
	} `json:"details"`
}

func (c *cluster) health(n *node) (int, health) {
	st, _, body := do(n.url(), c.token, "GET", "/health", nil, nil)
	var h health
	json.Unmarshal(body, &h)
	return st, h
}

// check finds a named check of the health details.
func (h health) check(name string) (status, message string) {
	if h.Details == nil {
		return "", ""
	}
	for _, c := range h.Details.Checks {
		if c.Name == name {
			return c.Status, c.Message
		}
	}
	return "", ""
}

// leader waits until some running node reports itself the leader.
func (c *cluster) leader() *node {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if !n.running() {
				continue
			}
			st, h := c.health(n)
			if st == 200 && h.Details != nil && h.Details.LeaderID == n.id {
				return n
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatal("no leader within 30s")
	return nil
}

// eventuallyOr is testkit.Eventually that adds what explain says to the
// failure.
func eventuallyOr(t *testing.T, within time.Duration, what string, cond func() bool, explain func() string) {
	t.Helper()
	if !testkit.Within(within, cond) {
		t.Fatalf("%s did not happen within %s: %s", what, within, explain())
	}
}

// listFiles lists the files under dir with their sizes.
func listFiles(dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			fmt.Fprintf(&b, "%10d %s\n", fi.Size(), p)
		}
		return nil
	})
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func jsonUnmarshal(b []byte, v any) { json.Unmarshal(b, v) }
