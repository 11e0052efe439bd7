package gb28181

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/svcplatform/svc/shared/digestauth"
)

// udpDevice sends hand-made requests from one UDP socket, so that a test
// controls their branches and CSeqs exactly.
type udpDevice struct {
	t    *testing.T
	conn net.PacketConn
	to   net.Addr
}

func (d udpDevice) request(method, branch string, cseq int, extra, body string) []byte {
	port := d.conn.LocalAddr().(*net.UDPAddr).Port
	to := "<sip:" + testDeviceID + "@" + testDomain + ">"
	if method == "MESSAGE" {
		to = "<sip:" + testPlatformID + "@" + testDomain + ">"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s sip:%s@%s SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:%d;rport;branch=%s\r\nMax-Forwards: 70\r\n", method, testPlatformID, testDomain, port, branch)
	fmt.Fprintf(&b, "From: <sip:%s@%s>;tag=udpdev\r\nTo: %s\r\nCall-ID: udpdev-call\r\nCSeq: %d %s\r\n", testDeviceID, testDomain, to, cseq, method)
	fmt.Fprintf(&b, "Contact: <sip:%s@127.0.0.1:%d>\r\n%s", testDeviceID, port, extra)
	if body != "" {
		b.WriteString("Content-Type: Application/MANSCDP+xml\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// exchange sends raw and returns the next response (skipping the
// platform's own requests, such as a catalog query).
func (d udpDevice) exchange(raw []byte) (*sip.Response, []byte) {
	d.t.Helper()
	if _, err := d.conn.WriteTo(raw, d.to); err != nil {
		d.t.Fatal(err)
	}
	buf := make([]byte, 65535)
	for {
		d.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, _, err := d.conn.ReadFrom(buf)
		if err != nil {
			d.t.Fatalf("no answer to %s: %v", bytes.SplitN(raw, []byte("\r\n"), 2)[0], err)
		}
		msg, err := sip.ParseMessage(buf[:n])
		if err != nil {
			d.t.Fatal(err)
		}
		if res, ok := msg.(*sip.Response); ok {
			return res, bytes.Clone(buf[:n])
		}
	}
}

// TestRetransmissionAbsorbedAndBranchReuseServed: a retransmitted request
// (same branch, same CSeq) is answered with the transaction's response and
// not processed again: a digest REGISTER processed twice would be a nonce
// replay (403). A new request that reuses the branch of an answered one
// (the next CSeq) is processed and answered with its own CSeq, where the
// SIP library alone answered it with the old transaction's 200.
func TestRetransmissionAbsorbedAndBranchReuseServed(t *testing.T) {
	s, _ := testService(t, time.Second, 30)
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d := udpDevice{t: t, conn: conn, to: s.UDPAddr()}

	res, _ := d.exchange(d.request("REGISTER", "z9hG4bK-reg-1", 1, "Expires: 3600\r\n", ""))
	m := regexp.MustCompile(`nonce="([^"]+)"`).FindStringSubmatch(res.GetHeader("WWW-Authenticate").Value())
	if res.StatusCode != 401 || m == nil {
		t.Fatalf("first REGISTER: %s", res.StartLine())
	}
	auth, err := digestauth.Build("MD5", "", testDomain, m[1], "REGISTER", "sip:"+testPlatformID+"@"+testDomain, testDeviceID, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	reg := d.request("REGISTER", "z9hG4bK-reg-2", 2, "Authorization: "+auth+"\r\nExpires: 3600\r\n", "")
	first, firstRaw := d.exchange(reg)
	again, againRaw := d.exchange(reg)
	if first.StatusCode != 200 || again.StatusCode != 200 || !bytes.Equal(firstRaw, againRaw) {
		t.Fatalf("the digest REGISTER and its retransmission: %s / %s", first.StartLine(), again.StartLine())
	}

	for cseq := 3; cseq <= 5; cseq++ {
		ka := d.request("MESSAGE", "z9hG4bK-keepalive", cseq, "", keepaliveBody(testDeviceID, cseq))
		for _, what := range []string{"keep-alive", "its retransmission"} {
			res, _ := d.exchange(ka)
			if res.StatusCode != 200 || res.CSeq().SeqNo != uint32(cseq) {
				t.Fatalf("%s CSeq %d with a reused branch: %s CSeq %d", what, cseq, res.StartLine(), res.CSeq().SeqNo)
			}
		}
	}
}

// TestBranchReusedByTheNextRequest: SIPp with its retransmissions on, its
// keep-alives from a loop (one Via branch, rising CSeqs). Each keep-alive
// gets one 200 with its own CSeq and the scenario ends; it used to turn
// into an endless exchange (SIPp resending its keep-alive for every old
// 200 the platform resent), which the deadline ends as a failure.
func TestBranchReusedByTheNextRequest(t *testing.T) {
	s, _ := testService(t, time.Second, 30)
	bin, err := exec.LookPath("sipp")
	if err != nil {
		t.Fatalf("sipp is required (Debian package sip-tester; scripts/install-deps.sh test installs it): %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-sf", filepath.Join(wd(t), "testdata", "keepalive_loop.xml"), "-m", "1", "-l", "1", "-t", "u1",
		"-i", "127.0.0.1", "-p", strconv.Itoa(freeUDPPort(t)), "-key", "device", testDeviceID, "-key", "platform", testPlatformID,
		"-key", "domain", testDomain, "-oocsf", filepath.Join(wd(t), "testdata", "answer_message.xml"), "-au", testDeviceID, "-ap", testPassword,
		"-recv_timeout", "30s", "-nostdin", "-trace_msg", "-message_file", filepath.Join(dir, "messages.log"), s.UDPAddr().String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	log, _ := os.ReadFile(filepath.Join(dir, "messages.log"))
	msgs := sippMessages(string(log))
	if err != nil {
		t.Fatalf("sipp: %v (%d messages)\n%s\nfirst messages:\n%s", err, len(msgs), lastLines(string(out), 10), strings.Join(msgs[:min(len(msgs), 12)], "\n"))
	}
	// Each keep-alive (CSeq 3-7) answered with its own CSeq; a slow
	// answer on a loaded machine may add a retransmission or two, not an
	// exchange without end.
	var answered []string
	for _, m := range msgs {
		if strings.HasPrefix(m, "received SIP/2.0 200") && strings.HasSuffix(m, "MESSAGE") {
			if f := strings.Fields(m); !slices.Contains(answered, f[len(f)-2]) {
				answered = append(answered, f[len(f)-2])
			}
		}
	}
	if got := strings.Join(answered, ","); got != "3,4,5,6,7" || len(msgs) > 40 {
		t.Fatalf("keep-alives answered %s in %d messages:\n%s", got, len(msgs), strings.Join(msgs, "\n"))
	}
}

// sippMessages summarises SIPp's message trace: "sent" or "received",
// the start line and the CSeq of each message, in order.
func sippMessages(trace string) []string {
	var out []string
	var cur string
	for _, line := range strings.Split(trace, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.Contains(line, "message sent"):
			cur = "sent"
		case strings.Contains(line, "message received"):
			cur = "received"
		case cur != "" && line != "" && !strings.HasPrefix(cur, "sent ") && !strings.HasPrefix(cur, "received "):
			cur += " " + line
		case strings.HasPrefix(line, "CSeq:") && cur != "":
			out = append(out, cur+" "+strings.TrimSpace(strings.TrimPrefix(line, "CSeq:")))
			cur = ""
		}
	}
	return out
}
