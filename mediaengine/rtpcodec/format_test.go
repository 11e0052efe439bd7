package rtpcodec

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/svcplatform/svc/mediaengine/media"
)

func TestFormatTrack(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	annexB := append(append([]byte{0, 0, 0, 1}, testSPS...), append([]byte{0, 0, 1}, testPPS...)...)
	tests := []struct {
		name     string
		f        Format
		codec    media.Codec
		sps, pps []byte
	}{
		{
			"H.264 sprop",
			Format{EncodingName: "H264", ClockRate: 90000, FMTP: ParseFMTP("packetization-mode=1; sprop-parameter-sets=" + b64(testSPS) + "," + b64(testPPS))},
			media.CodecH264,
			testSPS,
			testPPS,
		},
		{"H.264 Annex-B sprop", Format{EncodingName: "h264", ClockRate: 90000, FMTP: ParseFMTP("sprop-parameter-sets=" + b64(annexB))}, media.CodecH264, testSPS, testPPS},
		{"H.264 empty sprop", Format{EncodingName: "H264", ClockRate: 90000, FMTP: ParseFMTP("sprop-parameter-sets=;packetization-mode=1")}, media.CodecH264, nil, nil},
		{"H.264 garbage sprop", Format{EncodingName: "H264", ClockRate: 90000, FMTP: ParseFMTP("sprop-parameter-sets=%%%,!!")}, media.CodecH264, nil, nil},
		{
			"H.264 unpadded base64",
			Format{EncodingName: "H264", ClockRate: 90000, FMTP: ParseFMTP("sprop-parameter-sets=" + base64.RawStdEncoding.EncodeToString(testSPS))},
			media.CodecH264,
			testSPS,
			nil,
		},
		{
			"H.265",
			Format{EncodingName: "H265", ClockRate: 90000, FMTP: ParseFMTP("sprop-vps=" + b64(testVPS) + ";sprop-sps=" + b64(testSPS265) + ";sprop-pps=" + b64(testPPS265))},
			media.CodecH265,
			testSPS265,
			testPPS265,
		},
		{"AAC", Format{EncodingName: "MPEG4-GENERIC", ClockRate: 44100, Channels: 2, FMTP: ParseFMTP("mode=AAC-hbr;config=1210")}, media.CodecAAC, nil, nil},
		{"static PCMU", Format{PayloadType: 0}, media.CodecPCMU, nil, nil},
		{"Opus", Format{EncodingName: "opus", ClockRate: 48000, Channels: 2, FMTP: ParseFMTP("sprop-stereo=1")}, media.CodecOpus, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := tt.f.Track(3)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Codec != tt.codec || tr.ID != 3 || tr.ClockRate == 0 {
				t.Fatalf("track %+v", tr)
			}
			if !bytes.Equal(tr.SPS, tt.sps) || !bytes.Equal(tr.PPS, tt.pps) {
				t.Fatalf("parameter sets % x / % x", tr.SPS, tr.PPS)
			}
			// What the engine announces for the track describes it again.
			back, err := FormatForTrack(tr, 96)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Format{
				PayloadType:  back.PayloadType,
				EncodingName: back.EncodingName,
				ClockRate:    back.ClockRate,
				Channels:     back.Channels,
				FMTP:         ParseFMTP(back.FMTPString()),
			}.Track(
				3,
			)
			if err != nil {
				t.Fatal(err)
			}
			if again.Codec != tr.Codec || !bytes.Equal(again.SPS, tr.SPS) || !bytes.Equal(again.AudioSpecificConfig, tr.AudioSpecificConfig) || again.Channels != tr.Channels {
				t.Fatalf("round trip: %+v vs %+v", again, tr)
			}
		})
	}
	if _, err := (Format{EncodingName: "VP9", ClockRate: 90000}).Track(0); err == nil {
		t.Fatal("VP9 accepted")
	}
	if _, err := (Format{EncodingName: "mpeg4-generic", ClockRate: 44100, FMTP: ParseFMTP("config=zz")}).Track(0); err == nil {
		t.Fatal("bad AAC config accepted")
	}
}
