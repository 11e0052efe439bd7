package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/bench/benchdoc"
)

// engine is `svc engine` as its own process on one core.
type engine struct {
	cmd     *exec.Cmd
	rtsp    string // RTSP server address
	control string
	secret  string
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// engineCores is the taskset CPU list the engines run on; GOMAXPROCS is
// the number of CPUs in it.
var engineCores = "1"

// engineLog is the engines' log level (their log goes to stderr).
var engineLog = "error"

// startEngine runs `svc engine` under taskset on engineCores.
func startEngine(svc, dir string) (*engine, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	secret := "bench-secret"
	secretFile := filepath.Join(dir, "control-secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		return nil, err
	}
	cfg := engineapi.Defaults()
	cfg.NodeID, cfg.ControlAddr, cfg.HTTPAddr, cfg.RTSPAddr, cfg.ControlSecretFile = "bench", freeAddr(), freeAddr(), freeAddr(), secretFile
	cfg.RTPPortMin, cfg.RTPPortMax = 39000, 39099
	cfg.DataDir, cfg.LogLevel = dir, engineLog
	cfgFile, err := benchdoc.WriteEngineConfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("taskset", "-c", engineCores, svc, "engine", "--config", cfgFile)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(len(strings.Split(engineCores, ","))))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &engine{cmd: cmd, rtsp: cfg.RTSPAddr, control: cfg.ControlAddr, secret: secret}
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := e.stats(); err == nil {
			return e, nil
		}
		if time.Now().After(deadline) {
			e.stop()
			return nil, fmt.Errorf("the engine did not answer within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *engine) stop() { benchdoc.Stop(e.cmd) }

// cpuSeconds is the engine's user+system CPU time (taskset execs the
// engine in place, so the pid is the engine's).
func (e *engine) cpuSeconds() float64 { return benchdoc.CPUSeconds(e.cmd.Process.Pid) }

func (e *engine) do(method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, "http://"+e.control+path, rd)
	req.Header.Set("Authorization", "Bearer "+e.secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b.String())
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (e *engine) stats() (engineapi.Stats, error) {
	var st engineapi.Stats
	return st, e.do("GET", engineapi.PathStats, nil, &st)
}

func (e *engine) openRTPServer(stream string, port int, ssrc uint32) error {
	return e.do("POST", engineapi.PathRTPServers, engineapi.OpenRTPServerRequest{App: "gb", Stream: stream, Port: port,
		Transport: engineapi.RTPTransportUDP, SSRC: ssrc, TimeoutSeconds: 30}, nil)
}

func (e *engine) rtpServers() ([]engineapi.RTPServerInfo, error) {
	var l engineapi.RTPServerList
	return l.Servers, e.do("GET", engineapi.PathRTPServers, nil, &l)
}
