package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/test/bench/benchdoc"
)

// svcBinary is a built svc to measure instead of building ./cmd/svc.
var svcBinary string

// regConfig is the registration benchmark's shape.
type regConfig struct {
	devices, rate, rounds int
	keepalive             time.Duration
	cpuProfile            string
	registerProfile       string // CPU profile of the registration phase
	registerTrace         string // execution trace of the registration phase
}

var reg regConfig

// regResult is what one registration run measured.
type regResult struct {
	regConfig
	auth, full    []float64 // ms: digest REGISTER -> 200, first REGISTER -> 200
	registered    int       // devices online once all had registered
	maxOffline    int       // most devices offline at any poll after that
	offlineEvents int       // device.gb28181.offline events in the outbox
	steadyCPU     float64   // control node share of a core while only keep-alives arrived
	steady        time.Duration
	calls, failed int // SIPp calls (one a device) and those that failed
}

// The device: REGISTER, 401, REGISTER with digest, 200, then a keep-alive
// every interval. "full" times the first REGISTER to the 200 (two round
// trips), "auth" the REGISTER carrying the digest to its 200. SIPp
// retransmits unanswered requests (T1 500 ms). Its keep-alives come from
// one place in a loop, so all carry the same Via branch: the platform
// used to take each for a retransmission of the previous one and resend
// the old 200, which SIPp answered by resending its keep-alive, an
// endless exchange (the bench ran with -nr until the platform told the
// two apart; see controlplane/gb28181/branches.go). A REGISTER without an
// answer in 5 s is sent again (the time restarts); a keep-alive without
// one in 10 s is given up and the next is sent on time.
const regScenario = `<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="gbbench device">
  <label id="1"/>
  <send start_rtd="full">
    <![CDATA[

      REGISTER sip:{{platform}}@{{domain}} SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];rport;branch=[branch]
      Max-Forwards: 70
      From: <sip:[field0]@{{domain}}>;tag=[call_number]dev
      To: <sip:[field0]@{{domain}}>
      Call-ID: [call_id]
      CSeq: 1 REGISTER
      Contact: <sip:[field0]@[local_ip]:[local_port]>
      Expires: 3600
      Content-Length: 0

    ]]>
  </send>
  <recv response="401" auth="true" timeout="5000" ontimeout="1"/>
  <label id="2"/>
  <send start_rtd="auth">
    <![CDATA[

      REGISTER sip:{{platform}}@{{domain}} SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];rport;branch=[branch]
      Max-Forwards: 70
      From: <sip:[field0]@{{domain}}>;tag=[call_number]dev
      To: <sip:[field0]@{{domain}}>
      Call-ID: [call_id]
      CSeq: 2 REGISTER
      Contact: <sip:[field0]@[local_ip]:[local_port]>
      [field1]
      Expires: 3600
      Content-Length: 0

    ]]>
  </send>
  <recv response="200" rtd="auth" timeout="5000" ontimeout="2"/>
  <nop rtd="full"/>
  <nop><action><assign assign_to="k" value="0"/></action></nop>
  <label id="3"/>
  <pause milliseconds="{{interval}}"/>
  <send>
    <![CDATA[

      MESSAGE sip:{{platform}}@{{domain}} SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];rport;branch=[branch]
      Max-Forwards: 70
      From: <sip:[field0]@{{domain}}>;tag=[call_number]dev
      To: <sip:{{platform}}@{{domain}}>
      Call-ID: [call_id]
      CSeq: [cseq] MESSAGE
      Content-Type: Application/MANSCDP+xml
      Content-Length: [len]

      <?xml version="1.0" encoding="GB2312"?>
      <Notify>
      <CmdType>Keepalive</CmdType>
      <SN>[cseq]</SN>
      <DeviceID>[field0]</DeviceID>
      <Status>OK</Status>
      </Notify>
    ]]>
  </send>
  <recv response="200" timeout="10000" ontimeout="4"/>
  <label id="4"/>
  <nop>
    <action>
      <add assign_to="k" value="1"/>
      <test assign_to="more" variable="k" compare="less_than" value="{{rounds}}"/>
    </action>
  </nop>
  <nop next="3" test="more"/>
</scenario>
`

// The platform's requests to a device (its catalog query on register)
// are answered 200.
const regAnswers = `<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="gbbench device answers">
  <recv request="MESSAGE"/>
  <send>
    <![CDATA[

      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]ans[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
</scenario>
`

// registrations runs c.devices SIPp devices (one UDP socket each) against
// a control node in this process.
func registrations(dir string, c regConfig) (regResult, error) {
	r := regResult{regConfig: c}
	p, sipAddr, err := startControl(dir)
	if err != nil {
		return r, err
	}
	defer p.close()
	sippDir := filepath.Join(dir, "sipp")
	if err := os.MkdirAll(sippDir, 0o755); err != nil {
		return r, err
	}
	fill := strings.NewReplacer("{{platform}}", gbPlatform, "{{domain}}", gbDomain, "{{interval}}", strconv.FormatInt(c.keepalive.Milliseconds(), 10),
		"{{rounds}}", strconv.Itoa(c.rounds))
	var csv strings.Builder
	csv.WriteString("SEQUENTIAL\n")
	for i := range c.devices {
		// SIPp fills a field's [authentication ...] keyword, not a
		// field inside the keyword.
		fmt.Fprintf(&csv, "3402000000132%07d;[authentication username=3402000000132%07d password=camera-pass];\n", i, i)
	}
	for name, text := range map[string]string{"device.xml": fill.Replace(regScenario), "answers.xml": regAnswers, "devices.csv": csv.String()} {
		if err := os.WriteFile(filepath.Join(sippDir, name), []byte(text), 0o644); err != nil {
			return r, err
		}
	}
	cpu := func() float64 { return benchdoc.CPUSeconds(os.Getpid()) }
	count := func(status string) int {
		var l struct{ Total int }
		p.call("GET", "/api/v2/gb28181/devices?pageSize=1&status="+status, nil, &l)
		return l.Total
	}
	sipp, err := p.start(sippDir, "sipp", "-sf", "device.xml", "-oocsf", "answers.xml", "-inf", "devices.csv", "-t", "un",
		"-max_socket", strconv.Itoa(c.devices+100), "-r", strconv.Itoa(c.rate), "-m", strconv.Itoa(c.devices), "-l", strconv.Itoa(c.devices),
		"-i", "127.0.0.1", "-p", strconv.Itoa(freeUDPPort()), "-trace_rtt", "-rtt_freq", "1", "-trace_stat", "-stf", "stat.csv", "-fd", "5",
		"-trace_err", "-recv_timeout", "30000", "-nostdin", "-timeout", strconv.Itoa(int(c.keepalive.Seconds())*c.rounds+300)+"s", sipAddr)
	if err != nil {
		return r, err
	}
	done := make(chan error, 1)
	go func() { done <- sipp.Wait() }()
	// Registration: every device online (or SIPp gave up).
	stopProfile, err := benchdoc.CPUProfile(c.registerProfile)
	if err != nil {
		return r, err
	}
	stopTrace, err := benchdoc.ExecutionTrace(c.registerTrace)
	if err != nil {
		stopProfile()
		return r, err
	}
	// The poll lists every device record (the status filter is not
	// indexed): polled every 20 ms it took a third of the control node's
	// CPU while the devices registered, and the registrations waited for
	// it. Twice a second is enough to see them all online.
	start := time.Now()
	deadline := start.Add(time.Duration(c.devices/c.rate+60) * time.Second)
	for count("online") < c.devices {
		if time.Now().After(deadline) {
			fmt.Printf("registrations: not every device registered within %s (%d of %d online)\n", deadline.Sub(start), count("online"), c.devices)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopTrace()
	stopProfile()
	r.registered = count("online")
	fmt.Printf("registrations: %d devices online after %s\n", r.registered, time.Since(start).Round(time.Second))
	// Steady state: keep-alives only, from a little after the last
	// registration (its catalog query and answer) to the last keep-alives.
	time.Sleep(10 * time.Second)
	if c.cpuProfile != "" {
		stop, err := benchdoc.CPUProfile(c.cpuProfile)
		if err != nil {
			return r, err
		}
		defer stop()
	}
	t0, cpu0 := time.Now(), cpu()
	var sippErr error
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case sippErr = <-done:
			waiting = false
		case <-tick.C:
			r.maxOffline = max(r.maxOffline, count("offline"))
			if n := count("online"); n < c.devices {
				fmt.Printf("registrations: %d online at %s\n", n, time.Since(start).Round(time.Second))
			}
		}
	}
	r.steady, r.steadyCPU = time.Since(t0), cpu()-cpu0
	r.steadyCPU /= r.steady.Seconds()
	r.maxOffline = max(r.maxOffline, count("offline"))
	r.offlineEvents = offlineEvents(p)
	p.procs = nil // SIPp has exited
	if err := r.readSIPp(sippDir); err != nil {
		return r, err
	}
	if sippErr != nil && r.failed == 0 {
		return r, fmt.Errorf("sipp: %w", sippErr)
	}
	return r, nil
}

// offlineEvents counts device.gb28181.offline events in the outbox.
func offlineEvents(p *platform) int {
	n := 0
	for page := 1; ; page++ {
		var l struct {
			Total int
			Rows  []struct{ EventName string }
		}
		if st, _, err := p.call("GET", fmt.Sprintf("/api/v2/events/outbox?page=%d&pageSize=100", page), nil, &l); err != nil || st != 200 {
			return -1
		}
		for _, e := range l.Rows {
			if e.EventName == "device.gb28181.offline" {
				n++
			}
		}
		if len(l.Rows) == 0 || page*100 >= l.Total {
			return n
		}
	}
}

// readSIPp reads the response times SIPp traced (whole milliseconds, by
// the scenario's names) and its final counts.
func (r *regResult) readSIPp(dir string) error {
	rtts, _ := filepath.Glob(filepath.Join(dir, "device_*_rtt.csv"))
	for _, path := range rtts {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			v := strings.Split(sc.Text(), ";")
			if len(v) < 3 {
				continue
			}
			ms, err := strconv.ParseFloat(v[1], 64)
			if err != nil {
				continue
			}
			switch strings.TrimSpace(v[2]) {
			case "full":
				r.full = append(r.full, ms)
			case "auth":
				r.auth = append(r.auth, ms)
			}
		}
		f.Close()
	}
	slices.Sort(r.full)
	slices.Sort(r.auth)
	b, err := os.ReadFile(filepath.Join(dir, "stat.csv"))
	if err != nil {
		return fmt.Errorf("sipp statistics: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 {
		return fmt.Errorf("sipp statistics: no rows")
	}
	head, last := strings.Split(lines[0], ";"), strings.Split(lines[len(lines)-1], ";")
	for i, h := range head {
		if i >= len(last) {
			break
		}
		v, _ := strconv.Atoi(last[i])
		switch h {
		case "TotalCallCreated":
			r.calls = v
		case "FailedCall(C)":
			r.failed = v
		}
	}
	if len(r.auth) == 0 {
		return fmt.Errorf("sipp traced no response times")
	}
	return nil
}

func msPct(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)*p/100, len(v)-1)]
}

// markdown is the registration part of the section.
func (r regResult) markdown(w *strings.Builder) {
	fmt.Fprintf(w, "### Device registrations and keep-alives\n\n")
	fmt.Fprintf(w, "%d SIPp devices (`sipp -t un`: one UDP socket and port each, ids from an injection file) register with the control "+
		"node's SIP server (in this process, defaults: 60 s x 3 offline window) at %d new devices a second: REGISTER, 401, REGISTER with "+
		"the MD5 digest, 200; the platform's catalog query on registering is answered 200. SIPp retransmits unanswered requests "+
		"(T1 500 ms; its keep-alives all carry one Via branch, which the platform tells from a retransmission by the CSeq): a REGISTER "+
		"unanswered for 5 s is sent again, a keep-alive unanswered for 10 s is given up. Then each device sends a MANSCDP `Keepalive` "+
		"every %s, %d times (%s). SIPp traces each device's response times (`-trace_rtt`); the devices in `offline` are polled every 5 s "+
		"(`GET /api/v2/gb28181/devices?status=offline`) and the outbox is searched for `device.gb28181.offline` at the end. The control "+
		"node's CPU is this process's user+system time (the control node and the bench's polls; SIPp is its own process) from 10 s after "+
		"the last device registered to the end of the keep-alives (%s).\n\n", r.devices, r.rate, r.keepalive, r.rounds,
		(r.keepalive * time.Duration(r.rounds)).Round(time.Second), r.steady.Round(time.Second))
	fmt.Fprintf(w, "| measure | value | target |\n|---|--:|---|\n")
	fmt.Fprintf(w, "| REGISTER with digest -> 200, p50 / p99 / max ms | %.1f / %.1f / %.1f | p99 < 20 ms (%s) |\n", msPct(r.auth, 50), msPct(r.auth, 99),
		msPct(r.auth, 100), benchdoc.Verdict(msPct(r.auth, 99) < 20))
	fmt.Fprintf(w, "| first REGISTER -> 200 (with the 401 round), p50 / p99 / max ms | %.1f / %.1f / %.1f | |\n", msPct(r.full, 50), msPct(r.full, 99),
		msPct(r.full, 100))
	fmt.Fprintf(w, "| devices online after registering | %d of %d | all |\n", r.registered, r.devices)
	fmt.Fprintf(w, "| devices ever offline (polls) / `device.gb28181.offline` events | %d / %d | 0 (%s) |\n", r.maxOffline, r.offlineEvents,
		benchdoc.Verdict(r.maxOffline == 0 && r.offlineEvents == 0))
	fmt.Fprintf(w, "| control node CPU during keep-alives, %% of a core | %.1f | < 25 (%s) |\n", r.steadyCPU*100, benchdoc.Verdict(r.steadyCPU < 0.25))
	fmt.Fprintf(w, "| SIPp devices (calls) failed | %d of %d | 0 |\n\n", r.failed, r.calls)
}
