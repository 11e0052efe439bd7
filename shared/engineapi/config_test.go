package engineapi

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDefaultsAndRoundTrip(t *testing.T) {
	c, err := Parse([]byte("nodeId: n1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.MediaServerID != "n1" || c.HLS.SegmentDuration.D() != 2*time.Second {
		t.Fatalf("defaults not applied: %+v", c)
	}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, b)
	}
	if back.HLS != c.HLS || !reflect.DeepEqual(back.Hooks, c.Hooks) || back.MediaServerID != c.MediaServerID {
		t.Fatalf("round trip changed the config:\n%+v\n%+v", c, back)
	}
}

func TestParseNamesTheWrongField(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "mediaServerId"},
		{"nodeId: n1\ncontrolAddr: 0.0.0.0:8089\n", "controlAddr"},
		{"nodeId: n1\nhls:\n  format: avi\n", "hls.format"},
		{"nodeId: n1\nhooks:\n  timeout: soon\n", "duration"},
		{"nodeId: n1\nrtpPortMin: 5000\nrtpPortMax: 4000\n", "rtpPortMin"},
		{"nodeId: n1\ntypo: 1\n", "typo"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error naming %q", tc.in, err, tc.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"rtsp://admin:hunter2@10.0.0.5:554/stream1": "rtsp://admin:xxxxx@10.0.0.5:554/stream1",
		"file:///clips/demo.ts":                     "file:///clips/demo.ts",
		"::not a url":                               "(unparsable URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
