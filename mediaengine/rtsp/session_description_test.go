package rtsp

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/svcplatform/svc/mediaengine/media"
)

var (
	sdpSPS = []byte{0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00, 0xa0, 0x3d, 0xa1, 0x00, 0x00, 0x03, 0x00, 0x01}
	sdpPPS = []byte{0x68, 0xcb, 0x83, 0xcb, 0x20}
)

func TestParseSessionDescription(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	annexB := append(append([]byte{0, 0, 0, 1}, sdpSPS...), append([]byte{0, 0, 0, 1}, sdpPPS...)...)
	tests := []struct {
		name     string
		sdp      string
		tracks   []media.Codec
		controls []string
		sps      []byte
	}{
		{
			name: "ffmpeg",
			sdp: "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\na=tool:libavformat 59.27.100\r\n" +
				"m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1; " +
				"sprop-parameter-sets=" + b64(sdpSPS) + "," + b64(sdpPPS) + "; profile-level-id=42C01E\r\na=control:streamid=0\r\n" +
				"m=audio 0 RTP/AVP 97\r\nb=AS:128\r\na=rtpmap:97 MPEG4-GENERIC/44100/2\r\na=fmtp:97 " +
				"profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; config=121056E500\r\na=control:streamid=1\r\n",
			tracks: []media.Codec{media.CodecH264, media.CodecAAC}, controls: []string{"streamid=0", "streamid=1"}, sps: sdpSPS,
		},
		{
			name: "camera with LF endings, missing t=, empty s=, bad c= and Annex-B sprop",
			sdp: "v=0\no=- 1 1 IN IP4 0.0.0.0\ns=\nc=IN IP4\na=control:*\n" +
				"m=video 0 RTP/AVP 96\nc=IN IP4 0.0.0.0 extra\na=rtpmap:96 H264/90000\na=fmtp:96 sprop-parameter-sets=" + b64(annexB) + "\na=control:trackID=1\n" +
				"m=audio 0 RTP/AVP 8\na=control:trackID=2\n",
			tracks: []media.Codec{media.CodecH264, media.CodecPCMA}, controls: []string{"trackID=1", "trackID=2"}, sps: sdpSPS,
		},
		{
			name: "attributes before t=, unknown media, garbage lines, empty sprop",
			sdp: "v=0\r\na=x-early:1\r\no=hik 1 1 IN IP4 1.2.3.4\r\ns=Media Presentation\r\nnot an sdp line\r\nt=now later\r\n" +
				"m=metadata 0 RTP/AVP 107\r\na=rtpmap:107 vnd.onvif.metadata/90000\r\n" +
				"m=video 0 RTP/AVP 96\r\na=rtpmap:96 H265/90000\r\na=fmtp:96 sprop-vps=;sprop-sps=;sprop-pps=\r\na=control:rtsp://1.2.3.4/video\r\n",
			tracks: []media.Codec{media.CodecH265}, controls: []string{"", "rtsp://1.2.3.4/video"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sd, err := ParseSessionDescription([]byte(tt.sdp))
			if err != nil {
				t.Fatal(err)
			}
			tracks := sd.Tracks()
			if len(tracks) != len(tt.tracks) {
				t.Fatalf("got %d tracks", len(tracks))
			}
			for i, c := range tt.tracks {
				if tracks[i].Codec != c || tracks[i].ID != i {
					t.Errorf("track %d: %v", i, tracks[i])
				}
			}
			for i, c := range tt.controls {
				if sd.Medias[i].Control != c {
					t.Errorf("media %d control %q", i, sd.Medias[i].Control)
				}
			}
			if !bytes.Equal(tracks[0].SPS, tt.sps) {
				t.Errorf("SPS % x", tracks[0].SPS)
			}
		})
	}
}

func TestMarshalSessionDescription(t *testing.T) {
	tracks := []*media.Track{
		{ID: 0, Codec: media.CodecH264, ClockRate: 90000, SPS: sdpSPS, PPS: sdpPPS},
		{ID: 1, Codec: media.CodecAAC, ClockRate: 48000, SampleRate: 48000, Channels: 2, AudioSpecificConfig: []byte{0x11, 0x90}},
		{ID: 2, Codec: media.CodecPCMU, ClockRate: 8000, SampleRate: 8000, Channels: 1},
	}
	b, err := MarshalSessionDescription(tracks, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	sd, err := ParseSessionDescription(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got := sd.Tracks()
	if len(got) != 3 || !bytes.Equal(got[0].SPS, sdpSPS) || !bytes.Equal(got[1].AudioSpecificConfig, tracks[1].AudioSpecificConfig) || got[2].Codec != media.CodecPCMU ||
		sd.Medias[1].Control != "trackID=1" {
		t.Fatalf("round trip lost something:\n%s", b)
	}
}

func FuzzParseSessionDescription(f *testing.F) {
	f.Add(
		[]byte(
			"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nt=0 0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 sprop-parameter-sets=Z0LAHtkAoD2hAAADAAE=,aMuDyyA=\r\n",
		),
	)
	f.Add([]byte("v=0\nm=audio x RTP/AVP 97\na=rtpmap:97 mpeg4-generic/0/2\na=fmtp:97 config=zz\n"))
	f.Add([]byte("m=video 0 RTP/AVP 96 97\na=rtpmap:97 H265/90000\na=fmtp:97 sprop-vps=QAEMAf//AWAAAAMAAAMAAAMAAAMAXawJ\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := ParseSessionDescription(data)
		if err != nil {
			return
		}
		for _, tr := range sd.Tracks() {
			if tr.ClockRate <= 0 {
				t.Fatalf("track without clock rate: %v", tr)
			}
		}
	})
}
