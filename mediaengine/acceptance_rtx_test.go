package mediaengine

import (
	"errors"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/peers"
)

// lossyHarness is the page Chromium runs for the retransmission test: it
// plays (mode=whep) or publishes its fake camera (mode=whip) through a
// lossy relay. Its own candidates are left out of the offer, and the
// answer's UDP candidate is pointed at the relay, so every packet either
// way passes the relay. It reports the video's NACK and retransmission
// counters from getStats and the answer's RTX formats.
const lossyHarness = `<!doctype html><html><body><video id="v" autoplay muted playsinline></video><script>
const q = new URLSearchParams(location.search);
const mode = q.get('mode'), target = q.get('url'), srv = q.get('srv'), relay = q.get('relay');
async function report(o) {
  const r = await fetch('/report', {method: 'POST', body: JSON.stringify(o)});
  return r.json();
}
const noCandidates = sdp => sdp.split('\r\n').filter(l => !l.startsWith('a=candidate') && l !== 'a=end-of-candidates').join('\r\n');
const viaRelay = sdp => sdp.split('\r\n').filter(l => !l.startsWith('a=candidate') || / udp /i.test(l))
  .map(l => l.startsWith('a=candidate') ? l.replace(' ' + srv + ' typ ', ' ' + relay + ' typ ') : l).join('\r\n');
(async () => {
  try {
    const pc = new RTCPeerConnection();
    if (mode === 'whip') {
      const media = await navigator.mediaDevices.getUserMedia({video: {width: 640, height: 480, frameRate: 25}, audio: true});
      for (const track of media.getTracks()) pc.addTransceiver(track, {direction: 'sendonly'});
    } else {
      pc.addTransceiver('video', {direction: 'recvonly'});
      pc.addTransceiver('audio', {direction: 'recvonly'});
      const v = document.getElementById('v'), ms = new MediaStream();
      pc.ontrack = e => { ms.addTrack(e.track); v.srcObject = ms; };
    }
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise(res => { if (pc.iceGatheringState === 'complete') res(); else pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && res(); });
    const r = await fetch(target, {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: noCandidates(pc.localDescription.sdp)});
    if (r.status !== 201) { await report({error: mode + ' answered ' + r.status + ': ' + await r.text()}); return; }
    const answer = await r.text();
    await pc.setRemoteDescription({type: 'answer', sdp: viaRelay(answer)});
    for (;;) {
      await new Promise(res => setTimeout(res, 500));
      const stats = await pc.getStats();
      let s = {};
      stats.forEach(x => { if ((x.type === 'inbound-rtp' || x.type === 'outbound-rtp') && x.kind === 'video') s = x; });
      await report({state: pc.connectionState, answer: answer, nacks: s.nackCount || 0, frames: s.framesDecoded || s.framesEncoded || 0,
        retransmitted: s.retransmittedPacketsSent || s.retransmittedPacketsReceived || 0});
    }
  } catch (e) {
    await report({error: String(e)});
  }
})();
</script></body></html>`

// lossyRelay forwards UDP between one browser and the engine's WebRTC
// port and drops every dropEvery-th RTP packet (RFC 7983: first byte
// 128-191; RTCP, payload types 192-223, passes) going one way. It counts
// the RTP packets each way by payload type; SRTP leaves the header clear.
type lossyRelay struct {
	down      *net.UDPConn // the browser's side
	up        *net.UDPConn // connected to the engine
	dropEvery int
	toBrowser bool // the lossy direction

	mu      sync.Mutex
	browser *net.UDPAddr
	sent    [2]map[uint8]int // [0] browser to engine, [1] engine to browser
	dropped int
}

func startLossyRelay(t *testing.T, engine net.Addr, toBrowser bool, dropEvery int) *lossyRelay {
	t.Helper()
	down, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	up, err := net.DialUDP("udp", nil, engine.(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	r := &lossyRelay{down: down, up: up, dropEvery: dropEvery, toBrowser: toBrowser, sent: [2]map[uint8]int{{}, {}}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, from, err := down.ReadFromUDP(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.browser = from
			r.mu.Unlock()
			if r.pass(buf[:n], 0) {
				up.Write(buf[:n])
			}
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, err := up.Read(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			r.mu.Lock()
			to := r.browser
			r.mu.Unlock()
			if err == nil && to != nil && r.pass(buf[:n], 1) {
				down.WriteToUDP(buf[:n], to)
			}
		}
	}()
	t.Cleanup(func() {
		down.Close()
		up.Close()
		wg.Wait()
	})
	return r
}

// pass counts an RTP packet going way dir and says whether it goes on.
func (r *lossyRelay) pass(b []byte, dir int) bool {
	if len(b) < 12 || b[0]>>6 != 2 || (b[1] >= 192 && b[1] <= 223) {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	pt := b[1] & 0x7f
	r.sent[dir][pt]++
	total := 0
	for _, n := range r.sent[dir] {
		total += n
	}
	if (dir == 1) == r.toBrowser && total%r.dropEvery == 0 {
		r.dropped++
		return false
	}
	return true
}

// droppedSoFar is how many packets the relay has dropped.
func (r *lossyRelay) droppedSoFar() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// packets is how many RTP packets of the payload types pts went way dir.
func (r *lossyRelay) packets(dir int, pts []uint8) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, pt := range pts {
		n += r.sent[dir][pt]
	}
	return n
}

var rtxFormat = regexp.MustCompile(`a=fmtp:(\d+) apt=\d+`)

// rtxPayloadTypes are the RTX formats an answer negotiated.
func rtxPayloadTypes(answer string) []uint8 {
	var out []uint8
	for _, m := range rtxFormat.FindAllStringSubmatch(answer, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, uint8(n))
	}
	return out
}

// TestAcceptanceWebRTCRetransmission: NACK and RTX work both ways under
// loss. A relay on loopback drops one RTP packet in 20 between the engine
// and Chromium. Playing over WHEP, Chromium NACKs the losses and the
// engine resends them on the RTX stream the answer negotiated (the relay
// sees RTX packets from the engine); publishing over WHIP, the engine
// NACKs and Chromium retransmits on RTX (its getStats counts the NACKs
// and retransmissions, the relay the RTX packets). Video keeps decoding
// in both cases.
func TestAcceptanceWebRTCRetransmission(t *testing.T) {
	te := startEngine(t, noDemo)
	srv := strconv.Itoa(te.rtc.UDPAddr().(*net.UDPAddr).Port)
	peers.Start(t, "ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-t", "120",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "50", "-b:v", "1M", "-pix_fmt", "yuv420p",
		"-f", "rtsp", "-rtsp_transport", "tcp", te.rtspURL("live/cam"))
	waitStreamReady(t, te, "live", "cam", 30*time.Second)

	for _, tc := range []struct {
		mode, url string
		toBrowser bool
	}{
		{"whep", te.mediaURL("/live/cam/whep"), true},
		{"whip", te.mediaURL("/live/pub/whip"), false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			relay := startLossyRelay(t, te.rtc.UDPAddr(), tc.toBrowser, 20)
			h := startBrowserHarness(t)
			h.page = lossyHarness
			browser := peers.StartChromium(t, "http://"+h.addr+"/?mode="+tc.mode+"&url="+url.QueryEscape(tc.url)+"&srv="+srv+
				"&relay="+strconv.Itoa(relay.down.LocalAddr().(*net.UDPAddr).Port))
			got := h.waitReport(t, "NACKs and retransmissions under loss", 90*time.Second, func(r browserReport) bool {
				return r.State == "connected" && r.Nacks >= 5 && r.Retransmitted >= 5 && r.Frames >= 100
			})
			rtx := rtxPayloadTypes(got.Answer)
			dir := 0
			if tc.toBrowser {
				dir = 1
			}
			resent := relay.packets(dir, rtx)
			if len(rtx) == 0 || resent == 0 {
				t.Fatalf("%d RTX packets (payload types %v) passed the relay; the answer: %s; browser: %s", resent, rtx, got.Answer, browser.Output())
			}
			t.Logf("%s: %d packets dropped, Chromium reports %d NACKs, %d retransmitted, %d frames; %d RTX packets on the wire",
				tc.mode, relay.droppedSoFar(), got.Nacks, got.Retransmitted, got.Frames, resent)
		})
	}
}
