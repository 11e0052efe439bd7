package credurl

import (
	"net/url"
	"strings"
	"testing"
)

func TestSplitAndJoin(t *testing.T) {
	cases := []struct {
		name, raw, bare, masked string
		user, password          string
		params                  map[string]string
	}{
		{"none", "rtsp://cam:554/Streaming/101", "rtsp://cam:554/Streaming/101", "rtsp://cam:554/Streaming/101", "", "", nil},
		{"userinfo", "rtsp://admin:s3cret@cam/a?x=1", "rtsp://cam/a?x=1", "rtsp://***@cam/a?x=1", "admin", "s3cret", nil},
		{"encoded userinfo", "rtsp://u%3Ax:p%2F@cam/a", "rtsp://cam/a", "rtsp://***@cam/a", "u:x", "p/", nil},
		{"query (Dahua)", "rtsp://10.0.0.7:554/cam/realmonitor?channel=1&subtype=0&user=admin&password=s3cret",
			"rtsp://10.0.0.7:554/cam/realmonitor?channel=1&subtype=0&user=***&password=***",
			"rtsp://10.0.0.7:554/cam/realmonitor?channel=1&subtype=0&user=***&password=***", "", "",
			map[string]string{"q:user": "admin", "q:password": "s3cret"}},
		{"query, other names and case", "rtsp://cam/live?USR=a%20b&PWD=x%26y", "rtsp://cam/live?USR=***&PWD=***", "rtsp://cam/live?USR=***&PWD=***", "", "",
			map[string]string{"q:USR": "a%20b", "q:PWD": "x%26y"}},
		{"path (XM)", "rtsp://192.168.1.10:554/user=admin&password=s3cret&channel=1&stream=0.sdp?",
			"rtsp://192.168.1.10:554/user=***&password=***&channel=1&stream=0.sdp?", "rtsp://192.168.1.10:554/user=***&password=***&channel=1&stream=0.sdp?", "", "",
			map[string]string{"p:user": "admin", "p:password": "s3cret"}},
		{
			"path with empty password",
			"rtsp://cam/user=admin&password=&channel=1",
			"rtsp://cam/user=***&password=***&channel=1",
			"rtsp://cam/user=***&password=***&channel=1",
			"",
			"",
			map[string]string{"p:user": "admin", "p:password": ""},
		},
		{"all three", "rtsp://a:b@cam/user=c&password=d/x?pwd=e", "rtsp://cam/user=***&password=***/x?pwd=***", "rtsp://***@cam/user=***&password=***/x?pwd=***", "a", "b",
			map[string]string{"p:user": "c", "p:password": "d", "q:pwd": "e"}},
		{
			"look-alikes stay",
			"rtsp://cam/stream?passport=1&users=2&subtype=0",
			"rtsp://cam/stream?passport=1&users=2&subtype=0",
			"rtsp://cam/stream?passport=1&users=2&subtype=0",
			"",
			"",
			nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bare, c, err := Split(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if bare != tc.bare || c.User != tc.user || c.Password != tc.password || len(c.Params) != len(tc.params) {
				t.Fatalf("Split = %q %+v", bare, c)
			}
			for k, v := range tc.params {
				if c.Params[k] != v {
					t.Fatalf("param %s = %q, want %q", k, c.Params[k], v)
				}
			}
			if got := Masked(bare, c.HasUser); got != tc.masked {
				t.Fatalf("Masked = %q, want %q", got, tc.masked)
			}
			if got := Redact(tc.raw); got != tc.masked {
				t.Fatalf("Redact = %q, want %q", got, tc.masked)
			}
			full, err := Join(bare, c)
			if err != nil || full != tc.raw {
				t.Fatalf("Join = %q, %v; want %q", full, err, tc.raw)
			}
		})
	}
}

func TestUnparsableIsNeverQuoted(t *testing.T) {
	raw := "rtsp://admin:s3cret@cam:99999999999/%zz"
	if _, _, err := Split(raw); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Split error %v", err)
	}
	if got := Redact(raw); strings.Contains(got, "s3cret") {
		t.Fatalf("Redact = %q", got)
	}
	if !Has(raw) {
		t.Fatal("an unparsable URL must count as carrying credentials")
	}
}

// FuzzSplit: URLs come from the network. Whatever the input, the bare form
// keeps no credential in a place credentials go, and joining the parts
// back gives a URL that splits the same way again.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"rtsp://admin:pw@10.0.0.7:554/Streaming/101",
		"rtsp://cam/realmonitor?channel=1&user=admin&password=pw",
		"rtsp://cam/user=admin&password=pw&channel=1&stream=0.sdp?",
		"rtsp://***@cam/a?pwd=***",
		"http://[::1]/onvif/device_service?x=%zz",
		"rtsp://a:b@c@d/e/usr=%41&psw=%2F",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		bare, c, err := Split(raw)
		if err != nil {
			if Redact(raw) != "(unparsable URL)" {
				t.Fatalf("Redact of an unparsable URL = %q", Redact(raw))
			}
			return
		}
		if u, _ := url.Parse(raw); u.Scheme == "" || u.Host == "" {
			return // not a source URL (callers refuse those first)
		}
		_, again, err := Split(bare)
		if err != nil {
			t.Fatalf("the bare form of %q does not parse: %v", raw, err)
		}
		if again.HasUser {
			t.Fatalf("bare URL %q keeps userinfo", bare)
		}
		for k, v := range again.Params {
			if v != Mask {
				t.Fatalf("bare URL %q keeps %s=%q", bare, k, v)
			}
		}
		full, err := Join(bare, c)
		if err != nil {
			t.Fatalf("Join of a split URL failed: %v", err)
		}
		bare2, c2, err := Split(full)
		if err != nil || bare2 != bare || !c2.Equal(c) {
			t.Fatalf("split(join(split(%q))) = %q %+v, %v; want %q %+v", raw, bare2, c2, err, bare, c)
		}
	})
}
