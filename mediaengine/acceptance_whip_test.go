package mediaengine

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// whipHarness is the page Chromium runs to publish: its fake camera and
// microphone go to a WHIP URL (with codec=VP8, offering VP8 and RTX only);
// it reports the connection state to /report and, when the answer says
// stop, releases the session with DELETE.
const whipHarness = `<!doctype html><html><body><script>
const whip = new URLSearchParams(location.search).get('whip');
const codec = new URLSearchParams(location.search).get('codec');
async function report(o) {
  const r = await fetch('/report', {method: 'POST', body: JSON.stringify(o)});
  return r.json();
}
(async () => {
  try {
    const media = await navigator.mediaDevices.getUserMedia({video: {width: 640, height: 480, frameRate: 25}, audio: true});
    const pc = new RTCPeerConnection();
    for (const track of media.getTracks()) {
      const tr = pc.addTransceiver(track, {direction: 'sendonly'});
      if (codec && track.kind === 'video') {
        tr.setCodecPreferences(RTCRtpSender.getCapabilities('video').codecs.filter(c =>
          c.mimeType === 'video/' + codec || c.mimeType === 'video/rtx'));
      }
    }
    const offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    const r = await fetch(whip, {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: offer.sdp});
    if (r.status !== 201) { await report({error: 'WHIP answered ' + r.status + ': ' + await r.text()}); return; }
    const loc = new URL(r.headers.get('Location'), whip).href;
    await pc.setRemoteDescription({type: 'answer', sdp: await r.text()});
    for (;;) {
      await new Promise(res => setTimeout(res, 500));
      const ans = await report({state: pc.connectionState});
      if (ans.stop) {
        const d = await fetch(loc, {method: 'DELETE'});
        await report({deleted: d.status});
        pc.close();
        return;
      }
    }
  } catch (e) {
    await report({error: String(e)});
  }
})();
</script></body></html>`

// TestAcceptanceWHIPFromChromium: Chromium publishes its fake camera and
// microphone over WHIP; the engine's stream carries H.264 and Opus as sent
// (no transcoding), HTTP-FLV plays its video and HTTP-fMP4 both tracks
// (ffprobe reads them), and DELETE on the session ends the stream.
func TestAcceptanceWHIPFromChromium(t *testing.T) {
	te := startEngine(t, noDemo)
	h := startBrowserHarness(t)
	h.page = whipHarness
	whip := te.mediaURL("/live/browser/whip")
	browser := peers.StartChromium(t, "http://"+h.addr+"/?whip="+url.QueryEscape(whip))
	h.waitReport(t, "the publisher to connect", 60*time.Second, func(r browserReport) bool { return r.State == "connected" })
	info := waitStreamReady(t, te, "live", "browser", 30*time.Second)
	if got := trackCodecs(info); got != "video:H264,audio:Opus" || info.Origin != "whip" {
		t.Fatalf("the published stream has %s from %q, want video:H264,audio:Opus from whip; browser: %s", got, info.Origin, browser.Output())
	}
	for _, o := range []struct{ name, path, want string }{
		{"http-flv", "/live/browser.live.flv", "video:h264"}, // FLV has no Opus
		{"http-fmp4", "/live/browser.live.mp4", "audio:opus,video:h264"},
	} {
		if got := probePackets(t, te.mediaURL(o.path), 150); got != o.want {
			t.Fatalf("%s of the WHIP stream carries %s, want %s", o.name, got, o.want)
		}
	}
	h.requestStop()
	if del := h.waitReport(t, "the session's DELETE", 30*time.Second, func(r browserReport) bool { return r.Deleted != 0 }); del.Deleted != http.StatusOK {
		t.Fatalf("DELETE of the WHIP session answered %d, want 200", del.Deleted)
	}
	testkit.Eventually(t, 10*time.Second, "the stream to end", func() bool {
		_, live := te.Hub().Stream(hubPath("live", "browser"))
		return !live && te.rtc.Sessions() == 0
	})
}

// probePackets reads n packets of a media URL with ffprobe and lists the
// streams (kind:codec, sorted) that have at least a fifth of them. It
// counts packets rather than seconds: ffprobe's time-based reading
// (mediaprobe) reads nothing of a live fMP4 that starts seconds in.
func probePackets(t *testing.T, url string, n int) string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-rw_timeout", "10000000", "-read_intervals", "%+#"+strconv.Itoa(n),
		"-show_entries", "packet=stream_index:stream=index,codec_type,codec_name", "-of", "json", url).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", url, err)
	}
	var r mediaprobe.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for _, p := range r.Packets {
		count[p.StreamIndex]++
	}
	var got []string
	for _, s := range r.Streams {
		if count[s.Index] >= n/5 {
			got = append(got, s.CodecType+":"+s.CodecName)
		}
	}
	sort.Strings(got)
	return strings.Join(got, ",")
}

// TestAcceptanceWHIPBytesInFlowReports: a WHIP publisher (Chromium) is in
// the flow reports as WHEP viewers are: while it publishes, the periodic
// report counts the bytes received from it under its session, and when it
// stops the final one has them all.
func TestAcceptanceWHIPBytesInFlowReports(t *testing.T) {
	rc, hooks := startHookReceiver(t)
	te := startEngine(t, func(c *engineapi.Config) {
		noDemo(c)
		c.Hooks.URL = hooks
		c.Hooks.FlowReportInterval = engineapi.Duration(time.Second)
	})
	h := startBrowserHarness(t)
	h.page = whipHarness
	whip := te.mediaURL("/live/browser/whip?svc_ticket=good")
	browser := peers.StartChromium(t, "http://"+h.addr+"/?whip="+url.QueryEscape(whip))
	h.waitReport(t, "the publisher to connect", 60*time.Second, func(r browserReport) bool { return r.State == "connected" })
	flows := func(final bool) []engineapi.PublisherFlow {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		var out []engineapi.PublisherFlow
		for _, raw := range rc.got[engineapi.HookOnFlowReport] {
			var f engineapi.FlowReportHook
			json.Unmarshal(raw, &f)
			for _, p := range f.Publishers {
				if p.Final == final {
					out = append(out, p)
				}
			}
		}
		return out
	}
	var running engineapi.PublisherFlow
	testkit.Eventually(t, 60*time.Second, "a flow report of the publishing WHIP session with 50 kB received", func() bool {
		for _, p := range flows(false) {
			if p.Bytes > 50_000 {
				running = p
				return true
			}
		}
		return false
	})
	if running.ID == "" || running.Protocol != "whip" || running.App != "live" || running.Stream != "browser" || running.RemoteAddr == "" {
		t.Fatalf("the running publisher's flow: %+v; browser: %s", running, browser.Output())
	}
	h.requestStop()
	if del := h.waitReport(t, "the session's DELETE", 30*time.Second, func(r browserReport) bool { return r.Deleted != 0 }); del.Deleted != http.StatusOK {
		t.Fatalf("DELETE of the WHIP session answered %d, want 200", del.Deleted)
	}
	var final []engineapi.PublisherFlow
	testkit.Eventually(t, 15*time.Second, "the WHIP publisher's final flow report", func() bool {
		final = flows(true)
		return len(final) > 0
	})
	f := final[0]
	// Chromium's fake camera at 640x480 sends some hundreds of kbit/s;
	// the total is at least what a running report counted and no flood.
	if len(final) != 1 || f.ID != running.ID || f.Bytes < running.Bytes || float64(f.Bytes) > f.DurationSec*2_000_000 || f.Stream != "browser" {
		t.Fatalf("final flows of the WHIP publisher: %+v (running %+v)", final, running)
	}
	t.Logf("WHIP publisher: %d bytes in %.1f s (%.0f kbit/s) in its final flow report", f.Bytes, f.DurationSec, float64(f.Bytes)*8/f.DurationSec/1000)
}
