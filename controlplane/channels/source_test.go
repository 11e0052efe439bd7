package channels

import (
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
)

func storeAll() store.RangeOptions { return store.RangeOptions{End: "\x00"} }

func TestSplitSource(t *testing.T) {
	cases := []struct {
		in, bare, user, pass string
		keep                 bool
	}{
		{"rtsp://cam/a", "rtsp://cam/a", "", "", false},
		{"RTSP://u:p@cam:554/a?x=1", "rtsp://cam:554/a?x=1", "u", "p", false},
		{"rtsp://u:p@ss@cam/a", "rtsp://cam/a", "u", "p@ss", false},
		{"rtsp://u%3Ax:p%2F@cam/a", "rtsp://cam/a", "u:x", "p/", false},
		{"rtsp://***@cam/a", "rtsp://cam/a", "", "", true},
		{"rtsp://onlyuser@cam/a", "rtsp://cam/a", "onlyuser", "", false},
		{"rtsp://[::1]:8554/a", "rtsp://[::1]:8554/a", "", "", false},
	}
	for _, tc := range cases {
		s, err := splitSource(tc.in)
		if err != nil || s.bare != tc.bare || s.user != tc.user || s.password != tc.pass || s.keep != tc.keep {
			t.Errorf("splitSource(%q) = %+v, %v", tc.in, s, err)
		}
	}
}

func TestStripCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"rtsp://u:secret@cam/a": "rtsp://cam/a",
		"cam/a":                 "cam/a",
		"10.0.0.7":              "10.0.0.7",
		"x://u:secret@":         "x://",
	} {
		if got := stripCredentials(in); got != want || strings.Contains(got, "secret") {
			t.Errorf("stripCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSplitSource: source URLs come from the network. Whatever the input,
// the stored form holds no credentials and the masked form no password.
func FuzzSplitSource(f *testing.F) {
	for _, s := range []string{"rtsp://admin:pw@10.0.0.7:554/Streaming/101", "rtsp://***@cam/a", "rtsps://u@h", "http://[::1]/onvif/device_service", "rtsp://a:b@c@d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := splitSource(raw)
		if err != nil {
			return
		}
		if strings.Contains(s.bare, "@") && s.bare != "" {
			// An "@" may remain only in the path or query.
			if i := strings.Index(s.bare, "://"); i >= 0 {
				rest := s.bare[i+3:]
				if j := strings.IndexAny(rest, "/?"); j < 0 || strings.Index(rest, "@") < j {
					t.Fatalf("bare URL %q keeps userinfo", s.bare)
				}
			}
		}
		masked := maskURL(s.bare, s.password != "")
		if s.password != "" && len(s.password) > 3 && strings.Contains(masked, s.password) && !strings.Contains(s.bare, s.password) {
			t.Fatalf("masked URL %q shows the password", masked)
		}
	})
}
