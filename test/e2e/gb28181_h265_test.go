package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/peers/psrtp"
	"github.com/svcplatform/svc/test/testkit"
)

// TestGB28181LiveH265AndG711 runs a SIPp camera whose media sender packs
// H.265 video and G.711 A-law audio into a program stream with a PSM, the
// way many GB28181 cameras send them, through the whole platform: the
// third-party start INVITEs the camera, the stream goes Online with both
// tracks, and every source of a playback lease that can carry H.265
// decodes in ffprobe as hevc 320x240 with pcm_alaw.
func TestGB28181LiveH265AndG711(t *testing.T) {
	const (
		deviceID  = "34020000001320000005"
		channelID = "34020000001310000005"
		domain    = "3402000000"
		platform  = "34020000002000000001"
	)
	cp, sipAddr := startGBPlatform(t, domain, platform)
	dir, sippLog := startSIPpCamera(t, sipAddr, "gb28181_answer.xml", deviceID, channelID, platform, domain)
	chID := catalogChannel(t, cp, deviceID)
	be := backend{t: t, api: cp.api, token: cp.newToken("channels.view", "streams.view", "streams.play", "channels.manage")}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+chID+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, body)
	}
	port, ssrc := liveInviteAtCamera(t, dir)
	psrtp.StartH265G711(t, psrtp.Config{Transport: psrtp.UDP, Addr: "127.0.0.1:" + strconv.Itoa(port), SSRC: ssrc})
	var session struct {
		Rows []struct {
			StreamId string
			Tracks   []struct{ Kind, Codec string }
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		be.call("GET", "/api/v2/third-party/streams?streamId="+deviceID+"_"+channelID+"&state=Online", nil, &session)
		if len(session.Rows) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the H.265 stream did not come Online within 60 s\nSIPp:\n%s", sippLog())
		}
	}
	codecs := map[string]string{}
	for _, tr := range session.Rows[0].Tracks {
		codecs[tr.Kind] = tr.Codec
	}
	if len(codecs) != 2 || !strings.EqualFold(codecs["video"], "H265") || !strings.EqualFold(codecs["audio"], "PCMA") {
		t.Fatalf("tracks %+v", session.Rows[0].Tracks)
	}
	var l lease
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+chID+"/playback-lease", map[string]any{"leaseSeconds": 60}, &l); st != 200 {
		t.Fatalf("lease: %d %s", st, body)
	}
	played := map[string]bool{}
	for _, s := range l.Sources {
		if s.Protocol == "http-flv" {
			// H.265 in FLV is Enhanced FLV (FourCC hvc1), which Debian's
			// ffmpeg 5.1 cannot read (6.1 and mpegts.js can), so the tags
			// themselves are checked.
			if n, err := enhancedFLVFrames(s.URL, 50); err != nil || n < 50 {
				t.Fatalf("http-flv: %d hvc1 frames: %v", n, err)
			}
			played[s.Protocol] = true
			continue
		}
		if s.Protocol != "http-fmp4" && s.Protocol != "hls" {
			continue
		}
		streams, videoPackets, err := probeStreams(s.URL, 4)
		if err != nil {
			t.Fatalf("%s: %v", s.Protocol, err)
		}
		if streams["video"] != "hevc 320x240" || streams["audio"] != "pcm_alaw" || videoPackets < 50 {
			t.Fatalf("%s played %v with %d video packets", s.Protocol, streams, videoPackets)
		}
		played[s.Protocol] = true
	}
	if !played["http-fmp4"] || !played["hls"] || !played["http-flv"] {
		t.Fatalf("played %v of sources %+v", played, l.Sources)
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+chID+"/stop", nil, nil); st != 200 {
		t.Fatalf("stop: %d %s", st, body)
	}
	testkit.Eventually(t, 60*time.Second, "the BYE at the camera", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bye.txt"))
		return err == nil
	})
}

// probeStreams reads url with ffprobe for the given seconds and reports
// each kind's codec (video as "codec WxH") and the video packets read.
func probeStreams(url string, seconds int) (map[string]string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+60)*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-rw_timeout", "10000000", "-read_intervals", fmt.Sprintf("%%+%d", seconds),
		"-show_entries", "stream=index,codec_type,codec_name,width,height:packet=stream_index", "-of", "json", url).CombinedOutput()
	if err != nil {
		return nil, 0, fmt.Errorf("ffprobe: %w: %s", err, tail(string(out), 400))
	}
	var doc struct {
		Streams []struct {
			Index         int
			CodecType     string `json:"codec_type"`
			CodecName     string `json:"codec_name"`
			Width, Height int
		}
		Packets []struct {
			StreamIndex int `json:"stream_index"`
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, 0, fmt.Errorf("ffprobe output: %w", err)
	}
	kinds, video := map[string]string{}, -1
	for _, s := range doc.Streams {
		switch s.CodecType {
		case "video":
			kinds["video"], video = fmt.Sprintf("%s %dx%d", s.CodecName, s.Width, s.Height), s.Index
		case "audio":
			kinds["audio"] = s.CodecName
		}
	}
	n := 0
	for _, p := range doc.Packets {
		if p.StreamIndex == video {
			n++
		}
	}
	return kinds, n, nil
}

// enhancedFLVFrames reads an HTTP-FLV stream until it has seen want H.265
// video tags in Enhanced FLV form (the ExHeader bit, FourCC hvc1, coded
// frames after one sequence start carrying a decoder configuration); it
// answers how many it saw.
func enhancedFLVFrames(url string, want int) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	head := make([]byte, 13) // FLV header and the first PreviousTagSize
	if _, err := io.ReadFull(r, head); err != nil || string(head[:3]) != "FLV" {
		return 0, fmt.Errorf("FLV header %q: %w", head, err)
	}
	seqStart, frames := false, 0
	for frames < want {
		tag := make([]byte, 11)
		if _, err := io.ReadFull(r, tag); err != nil {
			return frames, err
		}
		size := int(tag[1])<<16 | int(tag[2])<<8 | int(tag[3])
		body := make([]byte, size+4)
		if _, err := io.ReadFull(r, body); err != nil {
			return frames, err
		}
		if tag[0] != 9 || size < 5 {
			continue
		}
		if body[0]&0x80 == 0 || string(body[1:5]) != "hvc1" {
			return frames, fmt.Errorf("a video tag that is not Enhanced FLV hvc1: % x", body[:min(8, size)])
		}
		switch body[0] & 0x0f {
		case 0: // PacketTypeSequenceStart: an HEVCDecoderConfigurationRecord
			if size < 5+23 || body[5] != 1 {
				return frames, fmt.Errorf("sequence start without a decoder configuration: % x", body[:min(16, size)])
			}
			seqStart = true
		case 1, 3: // coded frames (with and without a composition time)
			if !seqStart {
				return frames, fmt.Errorf("a coded frame before the sequence start")
			}
			frames++
		}
	}
	return frames, nil
}
