package mediaengine

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/testkit"
)

// gbWant is what ffprobe must find in the psrtp sender's default stream:
// GStreamer's 320x240 25 fps H.264 and 44.1 kHz mono AAC through mpegpsmux.
var gbWant = mediaprobe.Want{VideoCodec: "h264", Width: 320, Height: 240, FPS: 25, AudioCodec: "aac",
	SampleRate: 44100, Channels: 1, AudioFrameSamples: 1024, MinSeconds: 10}

// openRTPServer opens an RTP server through the control API.
func openRTPServer(t *testing.T, te *testEngine, req engineapi.OpenRTPServerRequest) engineapi.RTPServerInfo {
	t.Helper()
	var info engineapi.RTPServerInfo
	if code := te.control(t, "POST", engineapi.PathRTPServers, req, &info); code != http.StatusOK {
		t.Fatalf("open RTP server: HTTP %d", code)
	}
	return info
}

func TestAcceptanceGB28181PSOverRTPPlaysEverywhere(t *testing.T) {
	te := startEngine(t, noDemo)
	const ssrc = 200000001
	for _, tc := range []struct {
		transport, sender string
		outs              []output
	}{
		{engineapi.RTPTransportUDP, psrtp.UDP, []output{outFLV, outHLS, outFMP4}},
		{engineapi.RTPTransportTCPPassive, psrtp.TCPDial, []output{outFLV, outHLS}},
		{engineapi.RTPTransportTCPActive, psrtp.TCPListen, []output{outFLV}},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			stream := "34020000001320000001_" + tc.transport
			req := engineapi.OpenRTPServerRequest{App: "rtp", Stream: stream, Transport: tc.transport, SSRC: ssrc, TimeoutSeconds: 30}
			var snd *psrtp.Sender
			if tc.transport == engineapi.RTPTransportTCPActive {
				snd = psrtp.Start(t, psrtp.Config{Transport: tc.sender, Addr: "127.0.0.1:0", SSRC: ssrc})
				req.Peer = snd.ListenAddr().String()
			} else {
				req.Port = peers.FreePort(t)
			}
			info := openRTPServer(t, te, req)
			if snd == nil {
				psrtp.Start(t, psrtp.Config{Transport: tc.sender, Addr: "127.0.0.1:" + strconv.Itoa(info.Port), SSRC: ssrc})
			}
			s := waitStreamReady(t, te, "rtp", stream, 30*time.Second)
			if trackCodecs(s) != "video:H264,audio:AAC" || s.Origin != "gb28181" {
				t.Fatalf("stream %s from %s", trackCodecs(s), s.Origin)
			}
			probeOutputs(t, te, "rtp", stream, gbWant, tc.outs...)
			var l engineapi.RTPServerList
			te.control(t, "GET", engineapi.PathRTPServers, nil, &l)
			if len(l.Servers) != 1 || !l.Servers[0].Published || l.Servers[0].WrongSSRC != 0 || l.Servers[0].Packets == 0 {
				t.Fatalf("servers %+v", l.Servers)
			}
			// Closing the server (a BYE) ends the stream.
			if code := te.control(t, "DELETE", "/api/v1/rtp-servers/"+info.ID, nil, nil); code != http.StatusNoContent {
				t.Fatalf("close: HTTP %d", code)
			}
			testkit.Eventually(t, 20*time.Second, "the stream to end", func() bool {
				var sl engineapi.StreamList
				te.control(t, "GET", engineapi.PathStreams+"?app=rtp&stream="+stream, nil, &sl)
				return len(sl.Streams) == 0
			})
		})
	}
}

// TestAcceptanceGB28181H265AndG711WithPSM: what GB28181 cameras send most
// (H.265 video, G.711 A-law audio, a PSM naming them 0x24 and 0x90), muxed
// by the test peer from ffmpeg's elementary streams, arrives over UDP as
// both tracks and plays over fMP4 (ffprobe reads hevc 320x240 and
// pcm_alaw 8 kHz mono with rising timestamps).
func TestAcceptanceGB28181H265AndG711WithPSM(t *testing.T) {
	te := startEngine(t, noDemo)
	info := openRTPServer(t, te, engineapi.OpenRTPServerRequest{App: "rtp", Stream: "hevc-alaw", Transport: engineapi.RTPTransportUDP,
		Port: peers.FreePort(t), SSRC: 7, TimeoutSeconds: 30})
	psrtp.StartH265G711(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(info.Port), SSRC: 7})
	s := waitStreamReady(t, te, "rtp", "hevc-alaw", 30*time.Second)
	if got := trackCodecs(s); got != "video:H265,audio:PCMA" && got != "audio:PCMA,video:H265" {
		t.Fatalf("stream %s", got)
	}
	r := mediaprobe.Probe(t, outFMP4.url(te, "rtp", "hevc-alaw"), probeSeconds)
	var video, audio int
	for _, st := range r.Streams {
		switch {
		case st.CodecName == "hevc" && st.Width == 320 && st.Height == 240:
			video = st.Index + 1
		case st.CodecName == "pcm_alaw" && st.SampleRate == "8000" && st.Channels == 1:
			audio = st.Index + 1
		}
	}
	if video == 0 || audio == 0 || len(r.Streams) != 2 {
		t.Fatalf("streams %+v", r.Streams)
	}
	last := map[int]float64{}
	count := map[int]int{}
	for _, p := range r.Packets {
		dts, err := strconv.ParseFloat(p.DTSTime, 64)
		if prev, ok := last[p.StreamIndex]; err != nil || (ok && dts <= prev) {
			t.Fatalf("stream %d packet DTS %q after %.3f", p.StreamIndex, p.DTSTime, prev)
		}
		last[p.StreamIndex] = dts
		count[p.StreamIndex]++
	}
	// 25 fps video; audio in 40 ms chunks, or however the muxer regroups it.
	if count[video-1] < 20*probeSeconds || count[audio-1] < 5*probeSeconds {
		t.Fatalf("packets in %d s: video %d, audio %d", probeSeconds, count[video-1], count[audio-1])
	}
}

func TestAcceptanceGB28181H265WithoutPSM(t *testing.T) {
	te := startEngine(t, noDemo)
	info := openRTPServer(t, te, engineapi.OpenRTPServerRequest{App: "rtp", Stream: "hevc", Transport: engineapi.RTPTransportUDP,
		Port: peers.FreePort(t), SSRC: 5, TimeoutSeconds: 30})
	psrtp.Start(t, psrtp.Config{Args: psrtp.FFmpegVOBArgs("libx265"), Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(info.Port), SSRC: 5})
	s := waitStreamReady(t, te, "rtp", "hevc", 30*time.Second)
	if trackCodecs(s) != "video:H265" {
		t.Fatalf("stream %s", trackCodecs(s))
	}
	// mediaprobe.Check wants audio; this stream has none.
	r := mediaprobe.Probe(t, outFMP4.url(te, "rtp", "hevc"), probeSeconds)
	if len(r.Streams) != 1 || r.Streams[0].CodecName != "hevc" || r.Streams[0].Width != 320 || r.Streams[0].Height != 240 {
		t.Fatalf("streams %+v", r.Streams)
	}
	last := -1.0
	for _, p := range r.Packets {
		dts, err := strconv.ParseFloat(p.DTSTime, 64)
		if err != nil || dts <= last {
			t.Fatalf("packet DTS %q after %.3f", p.DTSTime, last)
		}
		last = dts
	}
	if len(r.Packets) < 200 {
		t.Fatalf("%d packets in %d s", len(r.Packets), probeSeconds)
	}
}

func TestAcceptanceGB28181ServerTimesOutAndRefusesBadRequests(t *testing.T) {
	te := startEngine(t, noDemo)
	port := peers.FreePort(t)
	req := engineapi.OpenRTPServerRequest{App: "rtp", Stream: "silent", Transport: engineapi.RTPTransportUDP, Port: port, TimeoutSeconds: 1}
	openRTPServer(t, te, req)
	for _, bad := range []struct {
		req  engineapi.OpenRTPServerRequest
		code int
	}{
		{req, http.StatusConflict},
		{engineapi.OpenRTPServerRequest{App: "rtp", Stream: "x", Transport: "sctp", Port: port + 1}, http.StatusBadRequest},
		{engineapi.OpenRTPServerRequest{App: "rtp", Stream: "x", Transport: engineapi.RTPTransportUDP, Port: 80}, http.StatusBadRequest},
		{engineapi.OpenRTPServerRequest{App: "rtp", Stream: "x", Transport: engineapi.RTPTransportTCPActive}, http.StatusBadRequest},
	} {
		var e engineapi.Error
		if code := te.control(t, "POST", engineapi.PathRTPServers, bad.req, &e); code != bad.code || e.Code == "" {
			t.Fatalf("%+v: HTTP %d %+v, want %d", bad.req, code, e, bad.code)
		}
	}
	testkit.Eventually(t, 20*time.Second, "the silent server to time out", func() bool {
		var l engineapi.RTPServerList
		te.control(t, "GET", engineapi.PathRTPServers, nil, &l)
		return len(l.Servers) == 0
	})
	if code := te.control(t, "DELETE", "/api/v1/rtp-servers/none", nil, nil); code != http.StatusNotFound {
		t.Fatalf("close unknown: HTTP %d", code)
	}
}
