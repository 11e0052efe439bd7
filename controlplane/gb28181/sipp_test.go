package gb28181

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/test/testkit"
)

// The tests' devices are SIPp (Debian sip-tester) running scenarios made
// from the templates in testdata; a missing sipp fails the test.

const (
	testPlatformID = "34020000002000000001"
	testDomain     = "3402000000"
	testPassword   = "12345678"
	testDeviceID   = "34020000001320000001"
)

// testService starts a service on loopback with an offline window of
// interval x count.
func testService(t *testing.T, interval time.Duration, count int, mutate ...func(*Config)) (*Service, store.Store) {
	t.Helper()
	st, keys := storetest.WithKeys(t, append([]query.Index{DeviceIndex}, channels.Indexes...)...)
	return serviceOn(t, st, keys, "cp1", interval, count, mutate...), st
}

// serviceOn starts a service of control node nodeID on st, as
// testService does.
func serviceOn(t *testing.T, st *raftnode.Node, keys *keyring.Keyring, nodeID string, interval time.Duration, count int, mutate ...func(*Config)) *Service {
	t.Helper()
	chans := &channels.Service{Store: st, Reader: st.State(), Keys: keys}
	cfg := DefaultConfig()
	cfg.CatalogOnRegister = false
	cfg.ID, cfg.Domain, cfg.Password, cfg.ListenAddr = testPlatformID, testDomain, testPassword, "127.0.0.1:0"
	cfg.KeepaliveInterval, cfg.KeepaliveCount, cfg.CheckInterval = interval, count, 100*time.Millisecond
	// SIPp refreshes back to back, far faster than a device would.
	cfg.MaxRegisterPerSecond = 100
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(cfg, st, chans, nodeID, zaptest.NewLogger(t).Named("gb28181"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// device is one SIPp device agent.
type device struct {
	ID, Password, Transport string
	// Port is the device's local SIP port; a new one is an address change.
	Port int
}

// scenarioArgs fill a scenario template.
type scenarioArgs struct {
	Refreshes, Keepalives int
	Expires               int
	Body                  string
	// Messages are extra MANSCDP bodies sent as MESSAGEs after the rest.
	Messages []string
	// ExpectMessage is the status the MESSAGEs are answered with.
	ExpectMessage int
	// Register is false for a scenario that only sends MESSAGEs.
	Register bool
	// WrongPassword expects a 403.
	WrongPassword bool
	// OOC is the out-of-call scenario in testdata answering the
	// platform's requests; default answer_message.xml.
	OOC string
	// PauseMs waits before the Messages (for the platform's query to
	// arrive and be answered by the out-of-call scenario).
	PauseMs int
	// TailMs keeps the device registered (and answering) after the
	// Messages.
	TailMs int
}

var scenarios = template.Must(template.New("").Funcs(template.FuncMap{
	"seq": func(n int) []int { return make([]int, n) },
	"add": func(a, b int) int { return a + b },
	"mul": func(a, b int) int { return a * b },
}).ParseFiles("testdata/device.xml.tmpl"))

// run has the device run a scenario against the service and fails the
// test when SIPp reports a failed call.
func (d device) run(t *testing.T, s *Service, a scenarioArgs) string {
	t.Helper()
	out, err := d.exec(t, s, a)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// start runs a scenario in the background; the channel yields its
// message log, or the failure.
func (d device) start(t *testing.T, s *Service, a scenarioArgs) <-chan sippResult {
	t.Helper()
	ch := make(chan sippResult, 1)
	go func() {
		out, err := d.exec(t, s, a)
		ch <- sippResult{out, err}
	}()
	return ch
}

type sippResult struct {
	log string
	err error
}

// exec runs a scenario and returns SIPp's message log.
func (d device) exec(t *testing.T, s *Service, a scenarioArgs) (string, error) {
	bin, err := exec.LookPath("sipp")
	if err != nil {
		return "", fmt.Errorf("sipp is required (Debian package sip-tester; scripts/install-deps.sh test installs it): %w", err)
	}
	if a.OOC == "" {
		a.OOC = "answer_message.xml"
	}
	dir := t.TempDir()
	var b bytes.Buffer
	if err := scenarios.ExecuteTemplate(&b, "device.xml.tmpl", a); err != nil {
		return "", err
	}
	sf := filepath.Join(dir, "scenario.xml")
	// Devices write MANSCDP in GB2312: so does the scenario (its SIP is
	// ASCII either way).
	gbk, err := simplifiedchinese.GBK.NewEncoder().Bytes(b.Bytes())
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(sf, gbk, 0o600); err != nil {
		return "", err
	}
	transport, server := "u1", s.UDPAddr().String()
	if d.Transport == "tcp" {
		transport, server = "t1", s.TCPAddr().String()
	}
	args := []string{"-sf", sf, "-m", "1", "-l", "1", "-t", transport, "-i", "127.0.0.1", "-p", strconv.Itoa(d.Port),
		"-key", "device", d.ID, "-key", "platform", testPlatformID, "-key", "domain", testDomain,
		"-oocsf", filepath.Join(wd(t), "testdata", a.OOC),
		"-au", d.ID, "-ap", d.Password, "-timeout", "60s", "-recv_timeout", "20s", "-nostdin",
		"-trace_msg", "-message_file", filepath.Join(dir, "messages.log"), "-trace_err", "-error_file", filepath.Join(dir, "errors.log"), server}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	msgs, _ := os.ReadFile(filepath.Join(dir, "messages.log"))
	if err != nil {
		errs, _ := os.ReadFile(filepath.Join(dir, "errors.log"))
		return string(msgs), fmt.Errorf("sipp: %w\n%s\nerrors:\n%s\nmessages:\n%s", err, lastLines(string(out), 20), errs, msgs)
	}
	return string(msgs), nil
}

func wd(t *testing.T) string {
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// freeUDPPort is a port free for UDP and TCP, claimed for the test.
func freeUDPPort(t *testing.T) int { return testkit.FreePort(t) }

// deviceEvents reads the gb28181 events in the outbox, oldest first.
func deviceEvents(t *testing.T, st store.Store) []events.Entry {
	t.Helper()
	resp, err := st.Range(context.Background(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix)})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Entry
	for _, kv := range resp.KVs {
		e, err := events.DecodeEntry(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		if e.Source == events.SourceGB28181 {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].EventID < out[j].EventID })
	return out
}

func eventNames(es []events.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, strings.TrimPrefix(e.EventName, "device.gb28181."))
	}
	return out
}

func keepaliveBody(id string, sn int) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="GB2312"?>
<Notify>
<CmdType>Keepalive</CmdType>
<SN>%d</SN>
<DeviceID>%s</DeviceID>
<Status>OK</Status>
</Notify>`, sn, id)
}

// catalogBody is page `page` (from 0) of a Catalog response of sum
// channels, per items a page, in GB2312 with Chinese names.
func catalogBody(id string, sn, sum, page, per int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"GB2312\"?>\n<Response>\n<CmdType>Catalog</CmdType>\n<SN>%d</SN>\n", sn)
	fmt.Fprintf(&b, "<DeviceID>%s</DeviceID>\n<SumNum>%d</SumNum>\n<DeviceList Num=\"%d\">\n", id, sum, per)
	for i := page * per; i < min(sum, (page+1)*per); i++ {
		fmt.Fprintf(&b, "<Item>\n<DeviceID>%s</DeviceID>\n<Name>%s</Name>\n<Manufacturer>SIPp</Manufacturer>\n<Status>ON</Status>\n<Info><PTZType>%d</PTZType></Info>\n</Item>\n",
			catalogChannelID(i), catalogName(i), 1+i%3)
	}
	b.WriteString("</DeviceList>\n</Response>")
	return b.String()
}

func catalogChannelID(i int) string { return fmt.Sprintf("3402000000131%07d", i) }

func catalogName(i int) string { return fmt.Sprintf("测试通道%04d", i) }

func decodeData(t *testing.T, e events.Entry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
