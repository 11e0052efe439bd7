package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/testkit"
)

// platform is a control node with its SIP server, an enrolled agent with
// its engine, and a SIPp camera registered to it.
type platform struct {
	api, token string
	procs      []*exec.Cmd
	stop       func()
	sippDir    string
}

func (p *platform) call(method, path string, body, out any) (int, []byte, error) {
	return benchdoc.Call(p.api, p.token, method, path, body, out)
}

func (p *platform) start(dir, name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.procs = append(p.procs, cmd)
	return cmd, nil
}

func (p *platform) close() {
	for _, c := range p.procs {
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			c.Process.Kill()
		}
	}
	if p.stop != nil {
		p.stop()
	}
}

func waitFor(what string, within time.Duration, cond func() bool) error {
	if !testkit.Within(within, cond) {
		return fmt.Errorf("%s did not happen within %s", what, within)
	}
	return nil
}

func freeUDPPort() int {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

const (
	gbDomain   = "3402000000"
	gbPlatform = "34020000002000000001"
	gbDevice   = "34020000001320000007"
	gbChannel  = "34020000001310000007"
)

// startControl starts a control node with its SIP server (devices
// authenticate with the password "camera-pass") and an API token.
func startControl(dir string) (p *platform, sipAddr string, err error) {
	p = &platform{}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	pw := filepath.Join(dir, "gb-password")
	if err := os.WriteFile(pw, []byte("camera-pass"), 0o600); err != nil {
		return nil, "", err
	}
	sipAddr = fmt.Sprintf("127.0.0.1:%d", freeUDPPort())
	ctx := context.Background()
	cfg := config.Defaults()
	cfg.NodeID, cfg.DataDir, cfg.LogLevel = "cp1", filepath.Join(dir, "cp1"), "error"
	cfg.HTTPAddr, cfg.RaftAddr, cfg.AgentAddr = benchdoc.FreeAddr(), benchdoc.FreeAddr(), benchdoc.FreeAddr()
	cfg.GB28181PasswordFile, cfg.SIPAddr, cfg.GB28181Domain, cfg.GB28181ID = pw, sipAddr, gbDomain, gbPlatform
	if err := cfg.Validate(); err != nil {
		return nil, "", err
	}
	s, err := server.Start(ctx, cfg, zap.NewNop())
	if err != nil {
		return nil, "", err
	}
	p.stop = func() { s.Shutdown() }
	for !s.Node.Leadership().IsLeader() {
		time.Sleep(20 * time.Millisecond)
	}
	p.api = "http://" + s.HTTPAddr
	if p.token, err = benchdoc.WriteToken(ctx, s.Node, apitoken.Record{TokenID: "bench", Name: "bench", OwnerUserID: "bench",
		Permissions: []string{"*"}}); err != nil {
		p.close()
		return nil, "", err
	}
	return p, sipAddr, nil
}

// startPlatform starts the control node, the media host and the camera.
func startPlatform(svc, dir string) (*platform, error) {
	p, sipAddr, err := startControl(dir)
	if err != nil {
		return nil, err
	}
	var en struct{ Code, CaHash, AgentServerUrl string }
	if err := waitFor("the cluster CA", 30*time.Second, func() bool {
		st, _, _ := p.call("POST", "/api/v2/system/lifecycle/agents/media-1/enrollment", map[string]any{}, &en)
		return st == 200
	}); err != nil {
		p.close()
		return nil, err
	}
	agentDir := filepath.Join(dir, "agent")
	if out, err := exec.Command(svc, "agent", "enroll", "--server", en.AgentServerUrl, "--code", en.Code, "--ca-hash", en.CaHash,
		"--data-dir", agentDir).CombinedOutput(); err != nil {
		p.close()
		return nil, fmt.Errorf("enroll: %w: %s", err, out)
	}
	if _, err := p.start("", svc, "agent", "run", "--data-dir", agentDir, "--log-level", "warn", "--engine-control-addr", benchdoc.FreeAddr(),
		"--engine-http-addr", benchdoc.FreeAddr(), "--engine-rtsp-addr", benchdoc.FreeAddr(), "--rtp-port-min", "32000", "--rtp-port-max", "32999",
		"--sysctl-dir", filepath.Join(agentDir, "sysctl.d"), "--heartbeat-interval", "1s"); err != nil {
		p.close()
		return nil, err
	}
	if err := waitFor("the media server online", 60*time.Second, func() bool {
		var list struct {
			Rows []struct{ MediaServerID, AgentStatus, EngineStatus string }
		}
		p.call("GET", "/api/v2/media-servers", nil, &list)
		return len(list.Rows) == 1 && list.Rows[0].AgentStatus == "online" && list.Rows[0].EngineStatus == "running"
	}); err != nil {
		p.close()
		return nil, err
	}
	// The camera: the e2e tests' SIPp device scenario (register with
	// digest, catalog of one channel, keep-alives) and its answers to the
	// platform (INVITE port and SSRC appended to invites.log).
	wd, _ := os.Getwd()
	testdata := filepath.Join(wd, "test", "e2e", "testdata")
	p.sippDir = filepath.Join(dir, "sipp")
	if err := os.MkdirAll(p.sippDir, 0o755); err != nil {
		p.close()
		return nil, err
	}
	_, err = p.start(p.sippDir, "sipp", "-sf", filepath.Join(testdata, "gb28181_device.xml"), "-oocsf", filepath.Join(testdata, "gb28181_answer.xml"),
		"-m", "1", "-t", "u1", "-i", "127.0.0.1", "-p", strconv.Itoa(freeUDPPort()), "-key", "device", gbDevice, "-key", "channel", gbChannel,
		"-key", "platform", gbPlatform, "-key", "domain", gbDomain, "-au", gbDevice, "-ap", "camera-pass", "-nostdin", "-timeout", "3600s", sipAddr)
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// invites measures n live invites of the SIPp camera's channel: the time
// from POST /api/v2/gb28181/live/invite to the INVITE at the camera, and to
// the stream Online (the engine reported its first frame in the hub),
// the camera's media sent the moment its INVITE is seen.
func invites(svc, dir string, n int, packs []pack) (atDevice, online []time.Duration, err error) {
	p, err := startPlatform(svc, dir)
	if err != nil {
		return nil, nil, err
	}
	defer p.close()
	var stream string
	if err := waitFor("the camera registered and its channel catalogued", 60*time.Second, func() bool {
		var list struct {
			Total int
			Rows  []struct{ ChannelID, Stream string }
		}
		p.call("GET", "/api/v2/channels?deviceId="+gbDevice, nil, &list)
		if list.Total == 1 {
			stream = list.Rows[0].Stream
		}
		return list.Total == 1
	}); err != nil {
		return nil, nil, err
	}
	isOnline := func() bool {
		var ss struct{ Total int }
		p.call("GET", "/api/v2/third-party/streams?streamId="+stream+"&state=Online", nil, &ss)
		return ss.Total == 1
	}
	logPath := filepath.Join(p.sippDir, "invites.log")
	lines := func() []string {
		b, _ := os.ReadFile(logPath)
		if s := strings.TrimSpace(string(b)); s != "" {
			return strings.Split(s, "\n")
		}
		return nil
	}
	body := map[string]any{"deviceId": gbDevice, "channelId": gbChannel, "mediaServerId": "media-1", "timeoutSeconds": 5}
	for i := range n {
		seen := len(lines())
		t0 := time.Now()
		if st, b, err := p.call("POST", "/api/v2/gb28181/live/invite", body, nil); err != nil || st != 200 {
			return nil, nil, fmt.Errorf("live invite %d: %d %s %w", i, st, b, err)
		}
		var f []string
		for deadline := time.Now().Add(20 * time.Second); ; {
			if l := lines(); len(l) > seen {
				f = strings.Fields(l[seen])
			}
			if len(f) == 3 {
				break
			}
			if time.Now().After(deadline) {
				return nil, nil, fmt.Errorf("invite %d: no INVITE at the camera within 20 s", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
		atDevice = append(atDevice, time.Since(t0))
		ssrc, _ := strconv.ParseUint(f[1], 10, 32)
		ctx, cancel := context.WithCancel(context.Background())
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			sendPS(ctx, packs, "127.0.0.1:"+f[0], uint32(ssrc), 0, nil)
		}()
		ok := testkit.Within(20*time.Second, isOnline)
		online = append(online, time.Since(t0))
		if !ok {
			cancel()
			return nil, nil, fmt.Errorf("invite %d: the stream was not Online within 20 s", i)
		}
		if st, b, err := p.call("POST", "/api/v2/gb28181/live/stop", map[string]any{"deviceId": gbDevice, "channelId": gbChannel}, nil); err != nil || st != 200 {
			cancel()
			return nil, nil, fmt.Errorf("live stop %d: %d %s %w", i, st, b, err)
		}
		cancel()
		<-sent
		if err := waitFor("the stream gone after the stop", 30*time.Second, func() bool { return !isOnline() }); err != nil {
			return nil, nil, err
		}
		fmt.Printf("invite %d: INVITE at the camera %s, Online %s\n", i+1, atDevice[i].Round(time.Millisecond), online[i].Round(time.Millisecond))
	}
	slices.Sort(atDevice)
	slices.Sort(online)
	return atDevice, online, nil
}
