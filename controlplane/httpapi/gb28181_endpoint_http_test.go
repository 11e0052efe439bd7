package httpapi_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestControlNodeServesGB28181WhenConfigured: with a device password file
// the node answers a REGISTER on its SIP address with a digest challenge
// in the platform's domain; without one it runs no SIP server.
func TestControlNodeServesGB28181WhenConfigured(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "gb-password")
	if err := os.WriteFile(pw, []byte("devices-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := controlnode.StartNodeWith(t, "cp1", "", "", func(c *config.Config) {
		c.GB28181PasswordFile, c.SIPAddr, c.GB28181Domain = pw, "127.0.0.1:0", "4401000000"
	}, nil)
	if ts.S.GB28181 == nil {
		t.Fatal("no SIP server")
	}
	c, err := net.Dial("udp", ts.S.GB28181.UDPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const id = "44010000001320000001"
	local := c.LocalAddr().String()
	msg := "REGISTER sip:34020000002000000001@4401000000 SIP/2.0\r\nVia: SIP/2.0/UDP " + local + ";rport;branch=z9hG4bK-srv-1\r\n" +
		"Max-Forwards: 70\r\nFrom: <sip:" + id + "@4401000000>;tag=a\r\nTo: <sip:" + id + "@4401000000>\r\nCall-ID: srv-1\r\nCSeq: 1 REGISTER\r\n" +
		"Contact: <sip:" + id + "@" + local + ">\r\nExpires: 3600\r\nContent-Length: 0\r\n\r\n"
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if resp := string(buf[:n]); !strings.HasPrefix(resp, "SIP/2.0 401") || !strings.Contains(resp, `realm="4401000000"`) {
		t.Fatalf("answer:\n%s", resp)
	}
	if plain := controlnode.StartNode(t, "cp2", "", ""); plain.S.GB28181 != nil {
		t.Fatal("a node without a device password runs a SIP server")
	}
}
