package mediaprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// FilePacket is one packet of a file in its stream's time base units.
type FilePacket struct {
	Stream   int    `json:"stream_index"`
	PTS      int64  `json:"pts"`
	DTS      int64  `json:"dts"`
	Duration int64  `json:"duration"`
	Size     string `json:"size"`
	Flags    string `json:"flags"`
}

// FileStream is one stream of a file.
type FileStream struct {
	Index     int    `json:"index"`
	CodecType string `json:"codec_type"`
	CodecName string `json:"codec_name"`
	TimeBase  string `json:"time_base"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
}

// File is what ffprobe reads from a whole file.
type File struct {
	Streams []FileStream `json:"streams"`
	Packets []FilePacket `json:"packets"`
}

// Kind answers the packets of the first stream of codec type kind
// ("video", "audio").
func (f File) Kind(kind string) []FilePacket {
	idx := -1
	for _, s := range f.Streams {
		if s.CodecType == kind {
			idx = s.Index
			break
		}
	}
	var out []FilePacket
	for _, p := range f.Packets {
		if p.Stream == idx {
			out = append(out, p)
		}
	}
	return out
}

// Seconds converts a timestamp of the first stream of codec type kind to
// seconds.
func (f File) Seconds(kind string, ts int64) float64 {
	for _, s := range f.Streams {
		if s.CodecType != kind {
			continue
		}
		var num, den int64
		if _, err := fmt.Sscanf(s.TimeBase, "%d/%d", &num, &den); err != nil || den == 0 {
			return 0
		}
		return float64(ts) * float64(num) / float64(den)
	}
	return 0
}

// ProbeFile lists a file's streams and every packet with ffprobe.
func ProbeFile(t *testing.T, path string) File {
	t.Helper()
	bin, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Fatalf("ffprobe is required (Debian package ffmpeg; scripts/install-deps.sh test installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-v", "error", "-show_streams", "-show_packets",
		"-show_entries", "packet=stream_index,pts,dts,duration,size,flags:stream=index,codec_type,codec_name,time_base,width,height",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var f File
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return f
}

// Decode decodes every frame of a file with ffmpeg and fails the test if
// ffmpeg reports any error.
func Decode(t *testing.T, path string) {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg is required (scripts/install-deps.sh test installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-v", "error", "-xerror", "-i", path, "-f", "null", "-")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("decoding %s: %v: %s", path, err, stderr.String())
	}
}
