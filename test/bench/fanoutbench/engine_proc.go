package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/bench/benchdoc"
)

// proc is a server process under measurement: the engine (`svc engine`)
// or the floor (this program with -floor).
type proc struct {
	cmd     *exec.Cmd
	addr    string // media address players connect to
	control string // engine control address; empty for the floor
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

// enginesStarted numbers the engines, for their RTP port ranges.
var enginesStarted atomic.Int32

// startEngine runs `svc engine` with the clip as its demo stream live/bench.
func startEngine(svc, dir, clip string, mergeWrite time.Duration) (*proc, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	secret := "bench-secret"
	secretFile := filepath.Join(dir, "control-secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		return nil, err
	}
	cfg := engineapi.Defaults()
	// Each engine its own ports (RTP ones included: its RTSP server binds a
	// pair at the start of the range): the ladders run several at once.
	cfg.NodeID, cfg.ControlAddr, cfg.HTTPAddr, cfg.RTSPAddr, cfg.ControlSecretFile = "bench", freeAddr(), freeAddr(), freeAddr(), secretFile
	k := int(enginesStarted.Add(1)) % 50
	cfg.RTPPortMin, cfg.RTPPortMax = 30000+k*100, 30000+k*100+99
	cfg.DataDir, cfg.LogLevel, cfg.DemoFile, cfg.DemoPath = dir, "error", clip, "live/bench"
	cfg.MergeWrite = engineapi.Duration(mergeWrite)
	cfgFile, err := benchdoc.WriteEngineConfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	args := []string{"engine", "--config", cfgFile}
	if engineProfile != "" {
		args = append(args, "--cpuprofile", engineProfile)
	}
	cmd := exec.Command(svc, args...)
	cmd.Stderr = os.Stderr
	if engineProcs > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(engineProcs))
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, addr: cfg.HTTPAddr, control: cfg.ControlAddr, secret: secret}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st, err := p.stats(); err == nil && st.Streams == 1 {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("the engine did not publish the clip within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// engineProcs, when positive, is the engines' GOMAXPROCS.
var engineProcs int

// engineProfile, when set, has the engines write a CPU profile there.
var engineProfile string

// startFloor runs this program as the floor server.
func startFloor(clip, statsPath string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr := freeAddr()
	cmd := exec.Command(self, "-floor", "-floor-addr", addr, "-floor-clip", clip, "-floor-stats", statsPath)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return &proc{cmd: cmd, addr: addr}, nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return nil, fmt.Errorf("the floor server did not listen within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) stop() { benchdoc.Stop(p.cmd) }

// cpuSeconds is the process's user+system CPU time.
func (p *proc) cpuSeconds() float64 { return benchdoc.CPUSeconds(p.cmd.Process.Pid) }

// rssBytes is the process's resident set size.
func (p *proc) rssBytes() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// settledRSS is the least RSS seen over d, sampled every 250 ms.
func (p *proc) settledRSS(d time.Duration) int64 {
	least := p.rssBytes()
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
		if r := p.rssBytes(); r > 0 && r < least {
			least = r
		}
	}
	return least
}

func (p *proc) stats() (engineapi.Stats, error) {
	var st engineapi.Stats
	if p.control == "" {
		return st, nil
	}
	req, _ := http.NewRequest("GET", "http://"+p.control+engineapi.PathStats, nil)
	req.Header.Set("Authorization", "Bearer "+p.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}
