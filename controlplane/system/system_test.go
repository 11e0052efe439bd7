package system_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/controlplane/system"
	"github.com/svcplatform/svc/shared/buildinfo"
)

func put(t *testing.T, st store.Store, key string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := st.Txn(context.Background(), store.TxnRequest{Then: []store.Op{store.Put(key, b)}}); err != nil {
		t.Fatal(err)
	}
}

// TestProcessInfo: on a single node that leads, the process information,
// roles, version, console overview and runtime figures read the real
// store and raft.
func TestProcessInfo(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	cl := cluster.New(cluster.Deps{Node: node, NodeID: "cp1", Engines: func(context.Context) (int, int, error) { return 0, 0, nil }})
	s := system.New(system.Deps{Node: node, NodeID: "cp1", StartedAt: time.Now().Add(-time.Minute), Cluster: cl})

	put(t, node, cluster.IdentityKey, cluster.Identity{ClusterID: "c-1", CreatedAt: time.Now()})
	in := s.Info(ctx)
	if in.NodeID != "cp1" || in.ClusterID != "c-1" || in.Version != buildinfo.Version || in.Uptime < time.Minute || in.Hostname == "" {
		t.Errorf("info %+v", in)
	}
	if strings.Join(in.Roles, ",") != "control-plane,raft-voter,background-leader" {
		t.Errorf("active roles %v", in.Roles)
	}
	for _, r := range s.Roles() {
		if !r.Enabled || !r.Active || r.Description == "" {
			t.Errorf("role %+v on a single voting leader", r)
		}
	}
	if v := s.Version(); v.ContractVersion != buildinfo.ContractVersion || v.StoreSchemaVersion < 1 {
		t.Errorf("version %+v", v)
	}

	put(t, node, "/channels/a", map[string]string{"id": "a"})
	put(t, node, "/channels/b", map[string]string{"id": "b"})
	put(t, node, "/security/users/u", map[string]string{"id": "u"})
	sum, err := s.ConsoleSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.ClusterID != "c-1" || sum.Members != 1 || sum.HealthyMembers != 1 || sum.LeaderID != "cp1" || sum.Revision != node.Revision() ||
		sum.Channels != 2 || sum.Users != 1 || sum.APITokens != 0 || sum.Nodes != 0 || len(sum.Warnings) != 0 {
		t.Errorf("console summary %+v", sum)
	}

	d := s.Diagnostics()
	if d.NodeID != "cp1" || d.Goroutines < 1 || d.GOMAXPROCS < 1 || d.Memory.HeapAllocBytes == 0 {
		t.Errorf("runtime %+v", d)
	}
	if d.Raft.State != "Leader" || d.Raft.LeaderID != "cp1" || d.Raft.AppliedIndex == 0 || d.Store.Revision != node.Revision() {
		t.Errorf("raft %+v store %+v", d.Raft, d.Store)
	}
}

// TestPorts: a TCP port someone accepts on and a bound UDP port are
// listening; a closed TCP port is not; a module that is not enabled says
// so.
func TestPorts(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	s := system.New(system.Deps{NodeID: "cp1", Ports: []system.Port{
		{Module: "http", Protocol: "tcp", Address: tcp.Addr().String(), Enabled: true},
		{Module: "rtp", Protocol: "udp", Address: udp.LocalAddr().String(), PortEnd: 65000, Enabled: true},
		{Module: "rtmp", Protocol: "tcp", Address: closedAddr, Enabled: false},
	}})
	ps := s.Ports()
	if len(ps) != 3 {
		t.Fatalf("ports %+v", ps)
	}
	if p := ps[0]; !p.Listening || p.Host != "127.0.0.1" || p.PortEnd != p.Port || p.Port == 0 {
		t.Errorf("listening tcp %+v", p)
	}
	if p := ps[1]; !p.Listening || p.PortEnd != 65000 {
		t.Errorf("bound udp %+v", p)
	}
	if p := ps[2]; p.Listening || !strings.HasPrefix(p.Message, "module not enabled on this node; not accepting") {
		t.Errorf("closed tcp of a disabled module %+v", p)
	}
}

// smtpServer accepts one SMTP conversation on loopback and hands back
// the envelope and the message it received.
func smtpServer(t *testing.T) (addr string, got <-chan []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tp := textproto.NewConn(c)
		var lines []string
		tp.PrintfLine("220 test ESMTP")
		for {
			l, err := tp.ReadLine()
			if err != nil {
				out <- lines
				return
			}
			switch verb := strings.ToUpper(strings.Fields(l + " x")[0]); verb {
			case "EHLO", "HELO":
				tp.PrintfLine("250 test")
			case "DATA":
				tp.PrintfLine("354 go on")
				body, _ := tp.ReadDotLines()
				lines = append(lines, body...)
				tp.PrintfLine("250 queued")
			case "QUIT":
				tp.PrintfLine("221 bye")
				out <- lines
				return
			default:
				lines = append(lines, l)
				tp.PrintfLine("250 ok")
			}
		}
	}()
	return ln.Addr().String(), out
}

// TestSendTestEmail: an unconfigured server and line breaks in the
// address are refused; a message goes through a real SMTP conversation
// with its envelope and headers; a server that is not there fails as
// retryable delivery failure.
func TestSendTestEmail(t *testing.T) {
	if _, err := system.New(system.Deps{}).SendTestEmail("a@b", "", "me"); !errors.Is(err, system.ErrEmailNotConfigured) {
		t.Fatalf("unconfigured: %v", err)
	}
	addr, got := smtpServer(t)
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	s := system.New(system.Deps{NodeID: "cp1", SMTP: system.SMTP{Host: host, Port: p, From: "ops@example.test"}})
	if _, err := s.SendTestEmail("a@b\r\nBcc: x@y", "", "me"); !errors.Is(err, system.ErrInvalidEmail) {
		t.Fatalf("line break: %v", err)
	}
	res, err := s.SendTestEmail("admin@example.test", "", "user:u1")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Sent || res.Server != addr || !strings.HasSuffix(res.MessageID, "@cp1>") {
		t.Errorf("result %+v", res)
	}
	lines := <-got
	text := strings.Join(lines, "\n")
	for _, want := range []string{"MAIL FROM:<ops@example.test>", "RCPT TO:<admin@example.test>", "Subject: svc operations e-mail test",
		"Message-ID: " + res.MessageID, "requested by user:u1"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in what the server received:\n%s", want, text)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	ln.Close()
	p, _ = strconv.Atoi(port)
	gone := system.New(system.Deps{NodeID: "cp1", SMTP: system.SMTP{Host: "127.0.0.1", Port: p, From: "ops@example.test"}})
	if _, err := gone.SendTestEmail("admin@example.test", "hi", "me"); !errors.Is(err, system.ErrEmailFailed) {
		t.Fatalf("no server: %v", err)
	}
}
