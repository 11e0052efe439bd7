// Package consolerun runs the web console's browser scenarios
// (console/e2e, Playwright driving Debian's Chromium) against a real `svc
// dev` on free ports with its own data directory, a GStreamer camera (the
// test's, from testkit) and a webhook receiver that checks every delivery's signature. The console test
// (make test) and the console benchmark (make bench) both use it. A missing
// peer (node, chromium, the camera's python) is an error, never a skip.
package consolerun

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svcplatform/svc/test/peers/chromium"
	"github.com/svcplatform/svc/test/testkit"
)

// Options of one run.
type Options struct {
	// Bin is the svc binary to run `svc dev` with.
	Bin string
	// Mode is "full" (the scenarios) or "bench" (first-load figures).
	Mode string
	// BenchRuns is how many first loads bench measures.
	BenchRuns int
	// Screenshots, when set, is where the pages' screenshots go.
	Screenshots string
	// Log receives progress lines.
	Log io.Writer
	// Camera is the GStreamer camera the scenarios use; bench needs none.
	Camera *testkit.Camera
}

// Result is what the browser reported, with the receiver's deliveries and
// the tails of both processes' output for a failure's report.
type Result struct {
	Browser  string           `json:"browser"`
	Seconds  int              `json:"seconds"`
	Figures  map[string]any   `json:"figures"`
	Runs     []map[string]any `json:"runs"`
	A11y     []map[string]any `json:"a11y"`
	Problems []string         `json:"problems"`
	Viewer   []string         `json:"viewerPages"`
	Error    string           `json:"error"`
	Received []Delivery       `json:"-"`
	Node     string           `json:"-"`
	Platform string           `json:"-"`
}

// Delivery is one webhook POST the receiver got.
type Delivery struct {
	Event, EventID string
	SignatureValid bool
}

// ConsoleDir is the console's npm project in this repository.
func ConsoleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "console")
}

// CheckPeers finds node and Chromium and makes sure the console's npm
// packages (Playwright, axe) are installed, running `npm ci` when not.
func CheckPeers(log io.Writer) error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is required for the console test (scripts/install-deps.sh test installs nodejs): %w", err)
	}
	if _, err := os.Stat(chromium.Path); err != nil {
		return fmt.Errorf("%s is required for the console test (scripts/install-deps.sh test installs chromium): %w", chromium.Path, err)
	}
	dir := ConsoleDir()
	for _, m := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", m, "package.json")); err == nil {
			continue
		}
		fmt.Fprintln(log, "console: npm ci (the browser test's packages are missing)")
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci in console/: %w\n%s", err, tail(string(out), 4000))
		}
		break
	}
	return nil
}

// Run starts the peers and the platform, runs the browser and stops them.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := CheckPeers(o.Log); err != nil {
		return nil, err
	}
	cam := o.Camera
	if cam == nil {
		if o.Mode != "bench" {
			return nil, errors.New("the scenarios need a camera (Options.Camera)")
		}
		cam = &testkit.Camera{}
	}
	secret := randomHex(16)
	rcv, err := startReceiver(secret)
	if err != nil {
		return nil, err
	}
	defer rcv.close()
	dev, err := startDev(ctx, o.Bin)
	if err != nil {
		return nil, err
	}
	defer dev.stop()
	fmt.Fprintf(o.Log, "console: svc dev at %s (media %s), camera on port %d, receiver %s\n", dev.api, dev.media, cam.Port, rcv.url)

	out, err := os.MkdirTemp("", "svc-console-result-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	resultFile := filepath.Join(out, "result.json")
	args := []string{"e2e/run.mjs", o.Mode}
	if o.Mode == "bench" {
		args = append(args, strconv.Itoa(max(1, o.BenchRuns)))
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = ConsoleDir()
	cmd.Env = append(os.Environ(),
		"SVC_URL="+dev.api,
		"SVC_ADMIN_PASSWORD="+dev.password,
		"MEDIA_ORIGIN="+dev.media,
		fmt.Sprintf("CAMERA_URL=rtsp://127.0.0.1:%d/h264", cam.Port),
		"CAMERA_USER="+cam.User, "CAMERA_PASSWORD="+cam.Password,
		"RECEIVER_URL="+rcv.url, "WEBHOOK_SECRET="+secret,
		"RESULT_FILE="+resultFile, "SCREENSHOT_DIR="+o.Screenshots, "CHROMIUM="+chromium.Path)
	var nodeOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &nodeOut, &nodeOut
	runErr := cmd.Run()
	res := &Result{}
	if b, err := os.ReadFile(resultFile); err == nil {
		if err := json.Unmarshal(b, res); err != nil {
			return nil, fmt.Errorf("reading the browser's results: %w", err)
		}
	}
	res.Node, res.Platform, res.Received = nodeOut.String(), dev.out.String(), rcv.deliveries()
	if runErr != nil {
		return res, fmt.Errorf("the browser run failed: %w\n%s", runErr, tail(res.Node, 6000))
	}
	return res, nil
}

// dev is a running `svc dev`.
type dev struct {
	cmd        *exec.Cmd
	dir        string
	api, media string
	password   string
	out        *testkit.Output
	done       chan struct{}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startDev(ctx context.Context, bin string) (*dev, error) {
	addrs := make([]string, 7)
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	dir, err := os.MkdirTemp("", "svc-console-dev-")
	if err != nil {
		return nil, err
	}
	d := &dev{dir: dir, api: "http://" + addrs[0], media: "http://" + addrs[3], out: &testkit.Output{}, done: make(chan struct{})}
	d.cmd = exec.Command(bin, "dev", "--data-dir", filepath.Join(dir, "data"), "--http-addr", addrs[0], "--raft-addr", addrs[1],
		"--agent-addr", addrs[2], "--engine-http-addr", addrs[3], "--engine-rtsp-addr", addrs[4], "--engine-control-addr", addrs[5],
		"--engine-webrtc-addr", addrs[6],
		// A one-minute access cookie makes the console refresh it (at 70%,
		// 42 s) during the run.
		"--webhook-allow-private-targets", "--session-access-ttl", "1m", "--log-level", "warn")
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		d.cmd.Wait()
		close(d.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pw, _ := os.ReadFile(filepath.Join(dir, "data", "dev-admin-password"))
		if len(pw) > 0 {
			if resp, err := http.Get(d.api + "/health"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					d.password = strings.TrimSpace(string(pw))
					return d, nil
				}
			}
		}
		select {
		case <-d.done:
			d.stop()
			return nil, fmt.Errorf("svc dev exited: %s", tail(d.out.String(), 4000))
		case <-ctx.Done():
			d.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("svc dev did not come up within 60 s: %s", tail(d.out.String(), 4000))
		}
	}
}

func (d *dev) stop() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
	os.RemoveAll(d.dir)
}

// receiver is a webhook receiver doing what contract A asks of one: it
// checks the signature over "<timestamp>.<raw body>" in constant time and
// that the headers match the body, and answers 204 or 401.
type receiver struct {
	srv    *http.Server
	url    string
	secret string
	mu     sync.Mutex
	got    []Delivery
}

func startReceiver(secret string) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hooks/svc", secret: secret}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	mac := hmac.New(sha256.New, []byte(r.secret))
	mac.Write([]byte(req.Header.Get("X-Svc-Timestamp") + "." + string(body)))
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	var env struct {
		EventID   string `json:"eventId"`
		EventName string `json:"eventName"`
	}
	valid := hmac.Equal([]byte(want), []byte(req.Header.Get("X-Svc-Signature"))) && json.Unmarshal(body, &env) == nil &&
		env.EventName == req.Header.Get("X-Svc-Event") && env.EventID == req.Header.Get("X-Svc-Event-Id")
	r.mu.Lock()
	r.got = append(r.got, Delivery{Event: env.EventName, EventID: env.EventID, SignatureValid: valid})
	r.mu.Unlock()
	if !valid {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		r.srv.Close()
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
