package e2e

import (
	"encoding/json"
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
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestGB28181TalkRelayedToHoldingNode: a SIPp camera registers with control
// node A; a talk session created through node B, which does not hold the
// camera's SIP transport, lives on A (the Broadcast, the camera's audio
// INVITE and the sender are A's), and its audio, push-to-talk, reading and
// release, all sent to B, reach it there: a 1 kHz tone posted to B arrives
// at the camera as G.711 RTP, push-to-talk off through B stops it.
func TestGB28181TalkRelayedToHoldingNode(t *testing.T) {
	const (
		deviceID  = "34020000001320000008"
		channelID = "34020000001370000008"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	pw := filepath.Join(t.TempDir(), "gb-password")
	if err := os.WriteFile(pw, []byte("camera-pass"), 0o600); err != nil {
		t.Fatal(err)
	}
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

	withSIP := func(addr string) func(*config.Config) {
		return func(c *config.Config) {
			c.GB28181PasswordFile, c.SIPAddr, c.GB28181Domain, c.GB28181ID = pw, addr, domain, platform
		}
	}
	sipA := freeUDPAddr(t)
	a := controlnode.StartNodeWith(t, "tka", "", "", withSIP(sipA), nil)
	b := controlnode.StartNodeWith(t, "tkb", a.URL, a.KeyFile(), withSIP(freeUDPAddr(t)), nil)
	dir, sippLog := startSIPpCamera(t, sipA, "gb28181_talk_answer.xml", deviceID, channelID, platform, domain,
		"-key", "audioport", strconv.Itoa(speaker.LocalAddr().(*net.UDPAddr).Port))
	view := b.Token("devices.view")
	testkit.Eventually(t, 60*time.Second, "the camera registered with A, seen on B", func() bool {
		r := b.Get("/api/v2/gb28181/devices/"+deviceID, view)
		var d struct{ Status, NodeId string }
		return r.Status == 200 && json.Unmarshal(r.Body, &d) == nil && d.Status == "online" && d.NodeId == "tka"
	})
	type session struct {
		Id, Codec, MediaState  string
		Ptt                    bool
		PacketsSent, BytesSent int64
	}
	talker := b.Token("devices.talk")
	var s session
	if r := b.Do("POST", "/api/v2/talk/sessions", talker, "application/json",
		[]byte(`{"protocol":"gb28181","deviceId":"`+deviceID+`","channelId":"`+channelID+`"}`)); r.Status != 200 {
		t.Fatalf("talk session through B: %d %s\nSIPp:\n%s", r.Status, r.Body, sippLog())
	} else if r.JSON(t, &s); s.Codec != "pcma" || s.MediaState != "Sending" || !s.Ptt {
		t.Fatalf("talk session through B: %s", r.Body)
	}
	testkit.Eventually(t, 10*time.Second, "the platform's answer at the camera", func() bool {
		_, err := os.Stat(filepath.Join(dir, "talk.txt"))
		return err == nil
	})
	tone, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=8000:duration=2",
		"-ac", "1", "-ar", "8000", "-f", "alaw", "pipe:1").Output()
	if err != nil || len(tone) != 16000 {
		t.Fatalf("ffmpeg tone: %d bytes, %v", len(tone), err)
	}
	path := "/api/v2/talk/sessions/" + s.Id
	body, _ := json.Marshal(map[string]any{"payload": tone})
	if r := b.Do("POST", path+"/audio", talker, "application/json", body); r.Status != 200 {
		t.Fatalf("audio through B: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 20*time.Second, "a second of audio at the camera", func() bool { return len(received()) >= 50 })
	got := received()
	var pcm []float64
	for i, p := range got[:50] {
		if p.PayloadType != 8 || len(p.Payload) != 160 {
			t.Fatalf("packet %d: pt %d, %d bytes", i, p.PayloadType, len(p.Payload))
		}
		for _, v := range p.Payload {
			pcm = append(pcm, alawDecode(v))
		}
	}
	at1k := goertzel(pcm, 1000, 8000)
	for _, f := range []float64{300, 700, 1500, 2500} {
		if other := goertzel(pcm, f, 8000); at1k < 100*other {
			t.Fatalf("1 kHz power %g is not far above %g Hz's %g", at1k, f, other)
		}
	}
	var off session
	if r := b.Do("POST", path+"/ptt", talker, "application/json", []byte(`{"enabled":false}`)); r.Status != 200 {
		t.Fatalf("ptt off through B: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &off); off.Ptt {
		t.Fatalf("ptt off through B: %s", r.Body)
	}
	if r := b.Do("POST", path+"/audio", talker, "application/json", body); r.Status != 409 {
		t.Fatalf("audio with push-to-talk off through B: %d %s", r.Status, r.Body)
	}
	var read session
	testkit.Eventually(t, 10*time.Second, "the session read through B matches what arrived", func() bool {
		r := b.Get(path, view)
		return r.Status == 200 && json.Unmarshal(r.Body, &read) == nil && !read.Ptt && read.PacketsSent > 0 && read.PacketsSent == int64(len(received()))
	})
	var rel session
	if r := b.Do("DELETE", path+"/media", talker, "", nil); r.Status != 200 {
		t.Fatalf("release through B: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &rel); rel.MediaState != "Released" {
		t.Fatalf("release through B: %s", r.Body)
	}
	if r := b.Get("/api/v2/talk/sessions/01a2262f-0daa-7e97-be48-881943e5b435", view); r.Status != 404 {
		t.Fatalf("unknown session through B: %d %s", r.Status, r.Body)
	}
}
