package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const etcdBinary = "/usr/bin/etcd"

// etcdTarget is a single-node etcd run as a child process on loopback with
// its default settings (fsync on).
type etcdTarget struct {
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	client  *clientv3.Client
	version string
	value   string
}

func startEtcd(ctx context.Context) (_ *etcdTarget, err error) {
	if _, err := os.Stat(etcdBinary); err != nil {
		return nil, fmt.Errorf("%s not found (apt-get install -y etcd-server): %w", etcdBinary, err)
	}
	dir, err := os.MkdirTemp("", "storebench-etcd-*")
	if err != nil {
		return nil, err
	}
	t := &etcdTarget{dir: dir, value: string(benchValue())}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	clientAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	peerAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	clientURL, peerURL := "http://"+clientAddr, "http://"+peerAddr
	logFile, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	t.cmd = exec.Command(etcdBinary,
		"--name", "storebench",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", clientURL,
		"--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "storebench="+peerURL,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "storebench",
		"--logger", "zap",
		"--log-outputs", "stderr",
	)
	t.cmd.Env = cleanEnv()
	t.cmd.Stdout, t.cmd.Stderr = logFile, logFile
	// Take etcd down with us if this process dies without cleaning up.
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	t.exited = make(chan struct{})
	go func() {
		t.cmd.Wait()
		close(t.exited)
	}()

	if err := t.waitHealthy(ctx, clientURL, 30*time.Second); err != nil {
		return nil, fmt.Errorf("%w; log tail:\n%s", err, tail(filepath.Join(dir, "etcd.log"), 2000))
	}
	t.version = fetchVersion(clientURL)
	t.client, err = clientv3.New(clientv3.Config{
		Endpoints: []string{clientAddr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// cleanEnv drops ETCD_* variables so only the flags configure etcd.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	return env
}

func (t *etcdTarget) waitHealthy(ctx context.Context, clientURL string, timeout time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-t.exited:
			return errors.New("etcd exited during start-up")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := hc.Get(clientURL + "/health"); err == nil {
			var h struct {
				Health string `json:"health"`
			}
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err == nil && h.Health == "true" {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd not healthy within %s", timeout)
}

func fetchVersion(clientURL string) string {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(clientURL + "/version")
	if err != nil {
		return "unknown"
	}
	defer resp.Body.Close()
	var v struct {
		Server string `json:"etcdserver"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil || v.Server == "" {
		return "unknown"
	}
	return v.Server
}

func (t *etcdTarget) put(ctx context.Context, key string) error {
	_, err := t.client.Put(ctx, key, t.value)
	return err
}

func (t *etcdTarget) serverPID() int {
	if t.cmd == nil || t.cmd.Process == nil {
		return 0
	}
	return t.cmd.Process.Pid
}

func (t *etcdTarget) close() error {
	var errs []error
	if t.client != nil {
		errs = append(errs, t.client.Close())
	}
	if t.cmd != nil && t.cmd.Process != nil {
		t.cmd.Process.Kill()
		select {
		case <-t.exited:
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("etcd did not exit after SIGKILL"))
		}
	}
	errs = append(errs, os.RemoveAll(t.dir))
	return errors.Join(errs...)
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	var b bytes.Buffer
	io.Copy(&b, f)
	return b.String()
}
