package gb28181

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/digestauth"
	"github.com/svcplatform/svc/test/testkit"
)

// rawSIP is a device speaking SIP over UDP by hand, for what SIPp cannot
// express (replaying a captured Authorization header).
type rawSIP struct {
	t    *testing.T
	conn *net.UDPConn
	seq  int
}

func newRawSIP(t *testing.T, s *Service) *rawSIP {
	c, err := net.DialUDP("udp", nil, s.UDPAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawSIP{t: t, conn: c}
}

// register sends a REGISTER as id with an optional Authorization and
// returns the response's status and headers.
func (r *rawSIP) register(id, auth string) (int, string) {
	r.t.Helper()
	r.seq++
	local := r.conn.LocalAddr().String()
	msg := fmt.Sprintf("REGISTER sip:%s@%s SIP/2.0\r\nVia: SIP/2.0/UDP %s;rport;branch=z9hG4bK-raw-%d-%d\r\nMax-Forwards: 70\r\n"+
		"From: <sip:%s@%s>;tag=raw\r\nTo: <sip:%s@%s>\r\nCall-ID: raw-%s\r\nCSeq: %d REGISTER\r\nContact: <sip:%s@%s>\r\n",
		testPlatformID, testDomain, local, time.Now().UnixNano(), r.seq, id, testDomain, id, testDomain, id, r.seq, id, local)
	if auth != "" {
		msg += "Authorization: " + auth + "\r\n"
	}
	msg += "Expires: 3600\r\nContent-Length: 0\r\n\r\n"
	if _, err := r.conn.Write([]byte(msg)); err != nil {
		r.t.Fatal(err)
	}
	buf := make([]byte, 4096)
	r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.conn.Read(buf)
	if err != nil {
		r.t.Fatalf("no answer to REGISTER: %v", err)
	}
	resp := string(buf[:n])
	code, _ := strconv.Atoi(strings.Fields(resp)[1])
	return code, resp
}

// message sends a MESSAGE with body and returns the status.
func (r *rawSIP) message(id, body string) int {
	r.t.Helper()
	r.seq++
	local := r.conn.LocalAddr().String()
	msg := fmt.Sprintf("MESSAGE sip:%s@%s SIP/2.0\r\nVia: SIP/2.0/UDP %s;rport;branch=z9hG4bK-rawm-%d-%d\r\nMax-Forwards: 70\r\n"+
		"From: <sip:%s@%s>;tag=raw\r\nTo: <sip:%s@%s>\r\nCall-ID: rawm-%d\r\nCSeq: %d MESSAGE\r\nContent-Type: Application/MANSCDP+xml\r\n"+
		"Content-Length: %d\r\n\r\n%s", testPlatformID, testDomain, local, time.Now().UnixNano(), r.seq, id, testDomain, testPlatformID, testDomain,
		r.seq, r.seq, len(body), body)
	if _, err := r.conn.Write([]byte(msg)); err != nil {
		r.t.Fatal(err)
	}
	buf := make([]byte, 4096)
	r.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.conn.Read(buf)
	if err != nil {
		r.t.Fatalf("no answer to MESSAGE: %v", err)
	}
	code, _ := strconv.Atoi(strings.Fields(string(buf[:n]))[1])
	return code
}

var nonceRE = regexp.MustCompile(`nonce="([^"]+)"`)

func digestFor(id, password, nonce string) string {
	uri := "sip:" + testPlatformID + "@" + testDomain
	response, _ := digestauth.Expected("MD5", id, testDomain, password, "REGISTER", uri, nonce, "", "", "")
	return fmt.Sprintf(`Digest username="%s", realm="%s", nonce="%s", uri="%s", response="%s", algorithm=MD5`,
		id, testDomain, nonce, uri, response)
}

func TestRegistrarRefusesReplaysBadIDsAndStorms(t *testing.T) {
	s, st := testService(t, time.Minute, 3, func(c *Config) { c.MaxRegisterPerSecond = 10 })
	r := newRawSIP(t, s)
	code, resp := r.register(testDeviceID, "")
	m := nonceRE.FindStringSubmatch(resp)
	if code != 401 || m == nil || !strings.Contains(resp, `realm="`+testDomain+`"`) {
		t.Fatalf("challenge: %d\n%s", code, resp)
	}
	auth := digestFor(testDeviceID, testPassword, m[1])
	if code, resp := r.register(testDeviceID, auth); code != 200 || !strings.Contains(resp, "Date: ") {
		t.Fatalf("digest: %d\n%s", code, resp)
	}
	// The same Authorization again is a replay.
	if code, _ := r.register(testDeviceID, auth); code != 403 {
		t.Fatalf("replayed nonce: %d", code)
	}
	// A nonce never issued is stale: a fresh challenge, no auth_failed.
	if code, resp := r.register(testDeviceID, digestFor(testDeviceID, testPassword, "00112233445566778899aabbccddeeff")); code != 401 ||
		!strings.Contains(resp, "stale=true") {
		t.Fatalf("unknown nonce: %d\n%s", code, resp)
	}
	// A device id that is not 20 digits.
	for _, id := range []string{"3402000000132000000", "3402000000132000000a", "340200000013200000012"} {
		if code, _ := r.register(id, ""); code != 400 {
			t.Fatalf("device id %q: %d", id, code)
		}
	}
	// A storm: beyond 10 a second, 503 with Retry-After.
	storm := 0
	for i := 0; i < 30; i++ {
		code, resp := r.register("34020000001320000002", "")
		if code == 503 {
			storm++
			if !strings.Contains(resp, "Retry-After: ") {
				t.Fatalf("503 without Retry-After:\n%s", resp)
			}
		}
	}
	if storm < 10 {
		t.Fatalf("%d of 30 REGISTERs in a burst refused", storm)
	}
	testkit.Eventually(t, 20*time.Second, "one registered and one auth_failed", func() bool {
		return strings.Join(eventNames(deviceEvents(t, st)), ",") == "registered,auth_failed"
	})
	if m := decodeData(t, deviceEvents(t, st)[1]); !strings.Contains(m["reason"].(string), "replayed") {
		t.Fatalf("auth_failed %v", m)
	}
}

func TestMessagesWithBadMANSCDPAreRefused(t *testing.T) {
	s, st := testService(t, time.Minute, 3)
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	dev.run(t, s, scenarioArgs{Register: true, Expires: 3600})
	bad := []string{
		`<?xml version="1.0"?><Notify><CmdType>Keepalive</CmdType><SN>1</SN><DeviceID>` + testDeviceID + `</DeviceID>`, // unclosed
		`<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><Notify><CmdType>&lol2;</CmdType></Notify>`,
		`<?xml version="1.0"?><Notify><CmdType>Keepalive</CmdType><SN>1</SN><DeviceID>1234</DeviceID></Notify>`,
		`<?xml version="1.0"?><Notify><CmdType>Keepalive</CmdType><DeviceID>` + testDeviceID + `</DeviceID><Junk>` + strings.Repeat("x", MaxManscdpBody) + `</Junk></Notify>`,
		`<?xml version="1.0" encoding="EBCDIC"?><Notify><CmdType>Keepalive</CmdType><DeviceID>` + testDeviceID + `</DeviceID></Notify>`,
		`<?xml version="1.0"?><Evil><CmdType>Keepalive</CmdType><DeviceID>` + testDeviceID + `</DeviceID></Evil>`,
	}
	raw := newRawSIP(t, s)
	for i, body := range bad {
		switch {
		case i == 3:
			continue // too large for one UDP datagram; ParseManscdp's bound is tested below
		case strings.Contains(body, "["):
			// SIPp reads [...] in a scenario as its own keywords.
			if code := raw.message(testDeviceID, body); code != 400 {
				t.Fatalf("body %d: %d", i, code)
			}
		default:
			dev.run(t, s, scenarioArgs{Messages: []string{body}, ExpectMessage: 400})
		}
	}
	if _, err := ParseManscdp([]byte(bad[3])); err == nil {
		t.Fatal("an oversized body parsed")
	}
	// A keep-alive from a device that never registered.
	other := device{ID: "34020000001320000009", Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	other.run(t, s, scenarioArgs{Messages: []string{keepaliveBody(other.ID, 1)}, ExpectMessage: 403})
	if got := strings.Join(eventNames(deviceEvents(t, st)), ","); got != "registered" {
		t.Fatalf("events %s", got)
	}
}

func FuzzParseManscdp(f *testing.F) {
	f.Add([]byte(keepaliveBody(testDeviceID, 1)))
	f.Add([]byte(catalogBody(testDeviceID, 1, 3, 0, 2)))
	f.Add([]byte(`<?xml version="1.0" encoding="GBK"?><Response><CmdType>Catalog</CmdType><DeviceID>` + testDeviceID + `</DeviceID><SumNum>1</SumNum></Response>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManscdp(b)
		if err == nil && (!ValidCode(m.DeviceID) || m.CmdType == "") {
			t.Fatalf("accepted %+v", m)
		}
	})
}
