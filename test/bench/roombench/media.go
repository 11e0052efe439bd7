package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"
	"github.com/pion/webrtc/v4/pkg/media/oggreader"
)

// clip is the publishers' media, read into memory once: H.264 access
// units (Annex B) at 25 fps and 20 ms Opus packets.
type clip struct {
	video [][]byte
	audio [][]byte
}

const (
	fps          = 25
	clipSeconds  = 10
	opusDuration = 20 * time.Millisecond
)

// makeClip has ffmpeg encode 10 s of a moving test picture (1280x720,
// constrained baseline at about 1.5 Mbit/s, a keyframe every 2 s, no
// B-frames, as a browser's camera sends it apart from the keyframe
// interval) and a tone (Opus, 48 kHz mono, 20 ms packets, one per Ogg
// page), and reads both.
func makeClip(dir string) (*clip, error) {
	h264, ogg := filepath.Join(dir, "clip.h264"), filepath.Join(dir, "clip.ogg")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=1280x720:rate=%d", fps),
		"-t", fmt.Sprint(clipSeconds), "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "baseline", "-level", "3.1", "-pix_fmt", "yuv420p",
		"-g", "50", "-bf", "0", "-b:v", "1500k", "-maxrate", "1800k", "-bufsize", "3000k", "-x264-params", "slices=1", "-f", "h264", h264).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ffmpeg (video): %w\n%s", err, out)
	}
	if out, err := exec.Command("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", fmt.Sprint(clipSeconds),
		"-c:a", "libopus", "-b:a", "32k", "-ac", "1", "-frame_duration", "20", "-page_duration", "20000", ogg).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ffmpeg (audio): %w\n%s", err, out)
	}
	raw, err := os.ReadFile(h264)
	if err != nil {
		return nil, err
	}
	c := &clip{video: accessUnits(raw)}
	if len(c.video) != fps*clipSeconds || !isKeyframe(c.video[0]) {
		return nil, fmt.Errorf("the clip has %d access units (want %d, the first a keyframe)", len(c.video), fps*clipSeconds)
	}
	f, err := os.Open(ogg)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, _, err := oggreader.NewWith(f)
	if err != nil {
		return nil, err
	}
	for {
		payload, hdr, err := rd.ParseNextPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if _, isHeader := hdr.HeaderType(payload); isHeader || len(payload) == 0 {
			continue // OpusTags
		}
		c.audio = append(c.audio, payload)
	}
	if len(c.audio) < clipSeconds*40 {
		return nil, fmt.Errorf("the clip has %d Opus packets", len(c.audio))
	}
	return c, nil
}

// accessUnits splits an Annex B stream of one slice per picture into
// access units: each VCL NAL unit (types 1-5) ends one, with the
// parameter sets and SEI before it. Each unit keeps its start codes.
func accessUnits(b []byte) [][]byte {
	var units [][]byte
	var cur []byte
	for _, nal := range splitAnnexB(b) {
		cur = append(cur, 0, 0, 0, 1)
		cur = append(cur, nal...)
		if t := nal[0] & 0x1f; t >= 1 && t <= 5 {
			units = append(units, cur)
			cur = nil
		}
	}
	return units
}

// splitAnnexB answers the NAL units of an Annex B stream, without their
// start codes.
func splitAnnexB(b []byte) [][]byte {
	var nals [][]byte
	start := -1
	for i := 0; i+3 <= len(b); {
		if b[i] == 0 && b[i+1] == 0 && b[i+2] == 1 {
			if start >= 0 {
				nals = append(nals, bytes.TrimRight(b[start:i], "\x00"))
			}
			i += 3
			start = i
			continue
		}
		i++
	}
	if start >= 0 && start < len(b) {
		nals = append(nals, b[start:])
	}
	out := nals[:0]
	for _, n := range nals {
		if len(n) > 0 {
			out = append(out, n)
		}
	}
	return out
}

func isKeyframe(au []byte) bool {
	for _, nal := range splitAnnexB(au) {
		if nal[0]&0x1f == 5 {
			return true
		}
	}
	return false
}

var (
	h264Capability = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000,
		SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"}
	opusCapability = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2,
		SDPFmtpLine: "minptime=10;useinbandfec=1"}
)

// newAPI is a pion API as a browser peer would use: the default
// interceptors (NACK, RTCP reports, TWCC), host candidates on loopback
// only, and the default codecs, or for a publisher only the two it sends
// (pion sends a track in the first negotiated format that fits it, which
// among its many H.264 variants need not be the answer's first, the one
// the engine takes).
func newAPI(publisher bool) (*webrtc.API, error) {
	me := &webrtc.MediaEngine{}
	if publisher {
		for _, c := range []struct {
			cap  webrtc.RTPCodecCapability
			pt   webrtc.PayloadType
			kind webrtc.RTPCodecType
		}{{h264Capability, 102, webrtc.RTPCodecTypeVideo}, {opusCapability, 111, webrtc.RTPCodecTypeAudio}} {
			if err := me.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: c.cap, PayloadType: c.pt}, c.kind); err != nil {
				return nil, err
			}
		}
	} else if err := me.RegisterDefaultCodecs(); err != nil {
		return nil, err
	}
	ir := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(me, ir); err != nil {
		return nil, err
	}
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	return webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(ir), webrtc.WithSettingEngine(se)), nil
}

// gatheredOffer creates pc's offer and waits for its candidates (host
// candidates on loopback: a few milliseconds), as a WHIP/WHEP client
// without trickle does.
func gatheredOffer(pc *webrtc.PeerConnection) (string, error) {
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return "", err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return "", err
	}
	<-gathered
	return pc.LocalDescription().SDP, nil
}

// postSDP sends an offer to a WHIP or WHEP URL with the participant
// token as a bearer credential; it answers the SDP answer and the
// session's Location.
func postSDP(ctx context.Context, url, token, offer string) (string, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader([]byte(offer)))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/sdp")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", "", fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, body)
	}
	return string(body), resp.Header.Get("Location"), nil
}

// deleteSession releases a WHIP or WHEP session.
func deleteSession(url, token string) {
	req, err := http.NewRequest("DELETE", url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// publisher is one participant's pion peer sending the clip's H.264 and
// Opus over WHIP, paced in real time and looped.
type publisher struct {
	pc     *webrtc.PeerConnection
	cancel context.CancelFunc
	done   chan struct{}
}

// publish connects a publisher to whipURL and starts sending once it is
// connected; it answers when the peer connection is connected.
func publish(api *webrtc.API, c *clip, whipURL, token string) (*publisher, error) {
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, err
	}
	video, err := webrtc.NewTrackLocalStaticSample(h264Capability, "video", "cam")
	if err != nil {
		pc.Close()
		return nil, err
	}
	audio, err := webrtc.NewTrackLocalStaticSample(opusCapability, "audio", "cam")
	if err != nil {
		pc.Close()
		return nil, err
	}
	for _, tr := range []webrtc.TrackLocal{audio, video} {
		sender, err := pc.AddTransceiverFromTrack(tr, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			pc.Close()
			return nil, err
		}
		// RTCP must be read for the interceptors (reports, NACK) to run.
		go func() {
			for {
				if _, _, err := sender.Sender().ReadRTCP(); err != nil {
					return
				}
			}
		}()
	}
	connected := make(chan struct{})
	var once sync.Once
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		if s == webrtc.PeerConnectionStateConnected {
			once.Do(func() { close(connected) })
		}
	})
	offer, err := gatheredOffer(pc)
	if err != nil {
		pc.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	answer, _, err := postSDP(ctx, whipURL, token, offer)
	if err == nil {
		err = pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer})
	}
	if err != nil {
		cancel()
		pc.Close()
		return nil, fmt.Errorf("WHIP: %w", err)
	}
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		cancel()
		pc.Close()
		return nil, errors.New("WHIP: the publisher did not connect within 30 s")
	}
	p := &publisher{pc: pc, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		go pace(ctx, time.Second/fps, c.video, time.Second/fps, video)
		pace(ctx, opusDuration, c.audio, opusDuration, audio)
	}()
	return p, nil
}

// pace writes samples every interval, looping, until ctx ends. The
// ticker drops ticks it could not keep up with; the samples' timestamps
// still advance by their duration each, as an encoder's do.
func pace(ctx context.Context, every time.Duration, samples [][]byte, d time.Duration, track *webrtc.TrackLocalStaticSample) {
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := track.WriteSample(media.Sample{Data: samples[i%len(samples)], Duration: d}); err != nil {
			return
		}
	}
}

func (p *publisher) close() {
	p.cancel()
	<-p.done
	p.pc.Close()
}
