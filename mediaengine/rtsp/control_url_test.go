package rtsp

import (
	"net/url"
	"testing"
)

func TestResolveControl(t *testing.T) {
	tests := []struct{ base, control, want string }{
		{"rtsp://cam:554/live/", "trackID=1", "rtsp://cam:554/live/trackID=1"},
		{"rtsp://cam:554/live", "trackID=1", "rtsp://cam:554/live/trackID=1"},
		{"rtsp://cam/live?token=x", "track1", "rtsp://cam/live/track1?token=x"},
		{"rtsp://cam/live?token=x", "track1?y=2", "rtsp://cam/live/track1?y=2"},
		{"rtsp://cam/live/", "*", "rtsp://cam/live/"},
		{"rtsp://cam/live/", "", "rtsp://cam/live/"},
		{"rtsp://cam/live/", "rtsp://other:8554/x/trackID=0", "rtsp://other:8554/x/trackID=0"},
		{"rtsp://u:p@cam/live/", "/abs/track", "rtsp://u:p@cam/abs/track"},
	}
	for _, tt := range tests {
		base, _ := url.Parse(tt.base)
		got, err := ResolveControl(base, tt.control)
		if err != nil || got.String() != tt.want {
			t.Errorf("%s + %s = %v %v, want %s", tt.base, tt.control, got, err, tt.want)
		}
	}
}
