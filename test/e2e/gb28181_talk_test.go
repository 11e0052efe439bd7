package e2e

import (
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181TalkEndToEnd: a talk session with a SIPp camera: the
// platform's Broadcast notification makes the camera INVITE it for audio
// (PCMA to the test's UDP port); a 1 kHz tone made by ffmpeg (A-law, 8 kHz)
// posted to the session arrives as RTP, 20 ms a packet, and a Goertzel
// filter finds 1 kHz far above other frequencies; with push-to-talk off
// nothing more arrives and new audio is refused; releasing the media
// sender stops it for good.
func TestGB28181TalkEndToEnd(t *testing.T) {
	const (
		deviceID  = "34020000001320000004"
		channelID = "34020000001370000001"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	svcbin.Build(t)
	pw := filepath.Join(t.TempDir(), "gb-password")
	if err := os.WriteFile(pw, []byte("camera-pass"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The camera's speaker: RTP arrives here.
	speaker, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer speaker.Close()
	var mu sync.Mutex
	var packets []rtp.Packet
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := speaker.ReadFrom(buf)
			if err != nil {
				return
			}
			var p rtp.Packet
			if p.Unmarshal(append([]byte(nil), buf[:n]...)) == nil {
				mu.Lock()
				packets = append(packets, p)
				mu.Unlock()
			}
		}
	}()
	received := func() []rtp.Packet { mu.Lock(); defer mu.Unlock(); return append([]rtp.Packet(nil), packets...) }

	sipAddr := freeUDPAddr(t)
	cp := startControlNode(t, func(c *config.Config) {
		c.GB28181PasswordFile, c.SIPAddr, c.GB28181Domain, c.GB28181ID = pw, sipAddr, domain, platform
	})
	dir, sippLog := startSIPpCamera(t, sipAddr, "gb28181_talk_answer.xml", deviceID, channelID, platform, domain,
		"-key", "audioport", strconv.Itoa(speaker.LocalAddr().(*net.UDPAddr).Port))
	testkit.Eventually(t, 60*time.Second, "the camera registered", func() bool {
		var d struct{ Status string }
		cp.call("GET", "/api/v2/gb28181/devices/"+deviceID, nil, &d)
		return d.Status == "online"
	})
	talker := backend{t: t, api: cp.api, token: cp.newToken("devices.talk")}
	viewer := backend{t: t, api: cp.api, token: cp.newToken("devices.view")}
	create := map[string]any{"protocol": "gb28181", "deviceId": deviceID, "channelId": channelID}
	if st, _ := viewer.call("POST", "/api/v2/talk/sessions", create, nil); st != 403 {
		t.Fatalf("a talk session without devices.talk: %d", st)
	}
	type session struct {
		Id, Codec, MediaState  string
		Ptt                    bool
		PacketsSent, BytesSent int64
	}
	var s session
	if st, b := talker.call("POST", "/api/v2/talk/sessions", create, &s); st != 200 || s.Codec != "pcma" || s.MediaState != "Sending" || !s.Ptt {
		t.Fatalf("talk session: %d %s\nSIPp:\n%s", st, b, sippLog())
	}
	testkit.Eventually(t, 10*time.Second, "the platform's answer at the camera", func() bool {
		_, err := os.Stat(filepath.Join(dir, "talk.txt"))
		return err == nil
	})
	if b, _ := os.ReadFile(filepath.Join(dir, "broadcast.txt")); string(b) != platform+" "+channelID+"\n" {
		t.Fatalf("the Broadcast's SourceID and TargetID: %q", b)
	}
	// Three seconds of a 1 kHz tone in A-law.
	tone, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=8000:duration=3",
		"-ac", "1", "-ar", "8000", "-f", "alaw", "pipe:1").Output()
	if err != nil || len(tone) != 24000 {
		t.Fatalf("ffmpeg tone: %d bytes, %v", len(tone), err)
	}
	path := "/api/v2/talk/sessions/" + s.Id
	if st, b := talker.call("POST", path+"/audio", map[string]any{"payload": tone}, nil); st != 200 {
		t.Fatalf("audio: %d %s", st, b)
	}
	testkit.Eventually(t, 10*time.Second, "a second of audio at the camera", func() bool { return len(received()) >= 50 })
	got := received()
	var pcm []float64
	for i, p := range got[:50] {
		if p.PayloadType != 8 || len(p.Payload) != 160 || p.SSRC != 100000001 {
			t.Fatalf("packet %d: pt %d, %d bytes, ssrc %d", i, p.PayloadType, len(p.Payload), p.SSRC)
		}
		if i > 0 && (p.SequenceNumber != got[i-1].SequenceNumber+1 || p.Timestamp != got[i-1].Timestamp+160) {
			t.Fatalf("packet %d: seq %d ts %d after %d %d", i, p.SequenceNumber, p.Timestamp, got[i-1].SequenceNumber, got[i-1].Timestamp)
		}
		for _, b := range p.Payload {
			pcm = append(pcm, alawDecode(b))
		}
	}
	at1k := goertzel(pcm, 1000, 8000)
	for _, f := range []float64{300, 700, 1500, 2500} {
		if other := goertzel(pcm, f, 8000); at1k < 100*other {
			t.Fatalf("1 kHz power %g is not far above %g Hz's %g", at1k, f, other)
		}
	}
	// Push-to-talk off: nothing more is sent, new audio is refused.
	var off session
	if st, b := talker.call("POST", path+"/ptt", map[string]any{"enabled": false}, &off); st != 200 || off.Ptt {
		t.Fatalf("ptt off: %d %s", st, b)
	}
	time.Sleep(100 * time.Millisecond) // a packet already on its way
	n := len(received())
	if st, _ := talker.call("POST", path+"/audio", map[string]any{"payload": tone[:1600]}, nil); st != 409 {
		t.Fatalf("audio with push-to-talk off: %d", st)
	}
	time.Sleep(time.Second)
	if m := len(received()); m != n || n >= 150 {
		t.Fatalf("packets with push-to-talk off: %d then %d", n, m)
	}
	var read session
	if st, b := viewer.call("GET", path, nil, &read); st != 200 || read.Ptt || read.PacketsSent != int64(n) || read.BytesSent != int64(160*n) {
		t.Fatalf("session: %d %s (camera got %d)", st, b, n)
	}
	// Releasing the media sender.
	var rel session
	if st, b := talker.call("DELETE", path+"/media", nil, &rel); st != 200 || rel.MediaState != "Released" {
		t.Fatalf("release: %d %s", st, b)
	}
	talker.call("POST", path+"/ptt", map[string]any{"enabled": true}, nil)
	if st, _ := talker.call("POST", path+"/audio", map[string]any{"payload": tone[:1600]}, nil); st != 409 {
		t.Fatalf("audio after release: %d", st)
	}
	if st, _ := viewer.call("GET", "/api/v2/talk/sessions/01a2262f-0daa-7e97-be48-881943e5b435", nil, nil); st != 404 {
		t.Fatalf("unknown session: %d", st)
	}
}

// alawDecode is ITU-T G.711 A-law to linear.
func alawDecode(a byte) float64 {
	a ^= 0x55
	t := int(a&0x0f) << 4
	seg := int(a&0x70) >> 4
	switch seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t += 0x108
		t <<= seg - 1
	}
	if a&0x80 == 0 {
		t = -t
	}
	return float64(t)
}

// goertzel is the power of samples at freq.
func goertzel(samples []float64, freq, rate float64) float64 {
	c := 2 * math.Cos(2*math.Pi*freq/rate)
	var s1, s2 float64
	for _, x := range samples {
		s1, s2 = x+c*s1-s2, s1
	}
	return s1*s1 + s2*s2 - c*s1*s2
}
