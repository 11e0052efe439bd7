package channels

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
)

func storeAll() store.RangeOptions { return store.RangeOptions{End: "\x00"} }

func TestSplitSource(t *testing.T) {
	cases := []struct {
		in, bare, user, pass string
		params               map[string]string
		keepUser             bool
		keepParams           []string
	}{
		{"rtsp://cam/a", "rtsp://cam/a", "", "", nil, false, nil},
		{"RTSP://u:p@cam:554/a?x=1", "rtsp://cam:554/a?x=1", "u", "p", nil, false, nil},
		{"rtsp://u:p@ss@cam/a", "rtsp://cam/a", "u", "p@ss", nil, false, nil},
		{"rtsp://u%3Ax:p%2F@cam/a", "rtsp://cam/a", "u:x", "p/", nil, false, nil},
		{"rtsp://***@cam/a", "rtsp://cam/a", "", "", nil, true, nil},
		{"rtsp://onlyuser@cam/a", "rtsp://cam/a", "onlyuser", "", nil, false, nil},
		{"rtsp://[::1]:8554/a", "rtsp://[::1]:8554/a", "", "", nil, false, nil},
		{"rtsp://cam/realmonitor?channel=1&user=admin&password=pw", "rtsp://cam/realmonitor?channel=1&user=***&password=***", "", "",
			map[string]string{"q:user": "admin", "q:password": "pw"}, false, nil},
		{"rtsp://cam/user=admin&password=pw&channel=1&stream=0.sdp?", "rtsp://cam/user=***&password=***&channel=1&stream=0.sdp?", "", "",
			map[string]string{"p:user": "admin", "p:password": "pw"}, false, nil},
		{"rtsp://cam/live?user=***&pwd=new", "rtsp://cam/live?user=***&pwd=***", "", "", map[string]string{"q:pwd": "new"}, false, []string{"q:user"}},
	}
	for _, tc := range cases {
		s, err := splitSource(tc.in)
		if err != nil || s.bare != tc.bare || s.creds.User != tc.user || s.creds.Password != tc.pass || s.keepUser != tc.keepUser ||
			len(s.creds.Params) != len(tc.params) || strings.Join(s.keepParams, ",") != strings.Join(tc.keepParams, ",") {
			t.Errorf("splitSource(%q) = %+v, %v", tc.in, s, err)
			continue
		}
		for k, v := range tc.params {
			if s.creds.Params[k] != v {
				t.Errorf("splitSource(%q) param %s = %q, want %q", tc.in, k, s.creds.Params[k], v)
			}
		}
	}
}

func TestStripCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"rtsp://u:secret@cam/a":           "rtsp://cam/a",
		"rtsp://cam/a?password=secret":    "rtsp://cam/a?password=***",
		"rtsp://cam/pwd=secret&channel=1": "rtsp://cam/pwd=***&channel=1",
		"cam/a":                           "cam/a",
		"10.0.0.7":                        "10.0.0.7",
		"x://u:secret@":                   "x://",
	} {
		if got := stripCredentials(in); got != want || strings.Contains(got, "secret") {
			t.Errorf("stripCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}

// The rule of issue 15, item 3: stored credentials follow a changed URL
// only to the same scheme, host and port; anything else needs them sent
// again or none. Query and path credentials (item 5) follow the same rule.
func TestStoredCredentialsStayWithTheirServer(t *testing.T) {
	s, node := newService(t)
	ctx := context.Background()
	cases := []struct {
		name, create, update string
		want                 string // "" for success, else a part of the error
		full                 string // the URL with credentials afterwards
	}{
		{"masked, same server, new path", "rtsp://admin:pw1@cam:554/a", "rtsp://***@cam:554/b", "", "rtsp://admin:pw1@cam:554/b"},
		{"masked, another host", "rtsp://admin:pw1@cam:554/a", "rtsp://***@attacker:554/a", "another server", ""},
		{"masked, another port", "rtsp://admin:pw1@cam:554/a", "rtsp://***@cam:8554/a", "another server", ""},
		{"masked, another scheme", "rtsp://admin:pw1@cam:554/a", "rtsps://***@cam:554/a", "another server", ""},
		{"new credentials, another host", "rtsp://admin:pw1@cam:554/a", "rtsp://other:pw2@elsewhere/a", "", "rtsp://other:pw2@elsewhere/a"},
		{"no credentials, another host", "rtsp://admin:pw1@cam:554/a", "rtsp://elsewhere/a", "", "rtsp://elsewhere/a"},
		{"query credentials kept", "rtsp://cam/live?channel=1&user=admin&password=pw1", "rtsp://cam/live?channel=2&user=***&password=***", "",
			"rtsp://cam/live?channel=2&user=admin&password=pw1"},
		{"query credentials, another host", "rtsp://cam/live?user=admin&password=pw1", "rtsp://attacker/live?user=***&password=***", "another server", ""},
		{"path credentials kept", "rtsp://cam/user=admin&password=pw1&channel=1", "rtsp://cam/user=***&password=***&channel=2", "",
			"rtsp://cam/user=admin&password=pw1&channel=2"},
		{"path mask of a parameter never stored", "rtsp://cam/user=admin&password=pw1", "rtsp://cam/user=***&password=***&pwd=***", "not stored", ""},
		{"userinfo mask with only parameters stored", "rtsp://cam/a?password=pw1", "rtsp://***@cam/a?password=***", "none are stored", ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := rtspInput("keep" + string(rune('a'+i)))
			in.SourceURL = ptr(tc.create)
			ch, err := s.Create(ctx, tester, in)
			if err != nil {
				t.Fatal(err)
			}
			ch, err = s.Update(ctx, tester, ch.ChannelID, Input{SourceURL: ptr(tc.update)})
			if tc.want != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "pw1") {
					t.Fatalf("update = %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if full, err := s.SourceURL(ctx, ch.ChannelID); err != nil || full != tc.full {
				t.Fatalf("SourceURL = %q, %v; want %q", full, err, tc.full)
			}
			if m := ch.MaskedSourceURL(); strings.Contains(m, "pw") || strings.Contains(m, "admin") {
				t.Fatalf("masked URL %q shows a credential", m)
			}
		})
	}
	resp, err := node.Range(ctx, "/", storeAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.KVs {
		if strings.Contains(string(kv.Value), "pw1") || strings.Contains(string(kv.Value), "pw2") {
			t.Fatalf("%s holds a password in clear", kv.Key)
		}
	}
}

// Opting in to Basic over plain rtsp:// exposes the stored password on the
// network, so it needs the credentials sent along.
func TestBasicOptInNeedsTheCredentials(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	ch, err := s.Create(ctx, tester, rtspInput("basic"))
	if err != nil {
		t.Fatal(err)
	}
	if ch.AllowBasicAuthOverPlainRTSP {
		t.Fatal("Basic over plain rtsp:// is allowed by default")
	}
	if _, err := s.Update(ctx, tester, ch.ChannelID, Input{AllowBasicAuthOverPlainRTSP: ptr(true)}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("opt-in without credentials: %v", err)
	}
	if _, err := s.Update(ctx, tester, ch.ChannelID, Input{AllowBasicAuthOverPlainRTSP: ptr(true), SourceURL: ptr("rtsp://***@10.0.0.7:554/Streaming/101")}); !errors.Is(
		err,
		ErrInvalid,
	) {
		t.Fatalf("opt-in with the mask: %v", err)
	}
	ch, err = s.Update(ctx, tester, ch.ChannelID, Input{AllowBasicAuthOverPlainRTSP: ptr(true), SourceURL: ptr("rtsp://admin:Pa55w0rd!@10.0.0.7:554/Streaming/101")})
	if err != nil || !ch.AllowBasicAuthOverPlainRTSP {
		t.Fatalf("opt-in with the credentials: %v", err)
	}
}

// FuzzSplitSource: source URLs come from the network. Whatever the input,
// the stored form holds no credentials and the masked form no password.
func FuzzSplitSource(f *testing.F) {
	for _, s := range []string{"rtsp://admin:pw@10.0.0.7:554/Streaming/101", "rtsp://***@cam/a", "rtsps://u@h", "http://[::1]/onvif/device_service",
		"rtsp://a:b@c@d/e", "rtsp://cam/live?user=admin&password=pw", "rtsp://cam/user=admin&password=pw&channel=1&stream=0.sdp?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := splitSource(raw)
		if err != nil {
			if strings.Contains(err.Error(), raw) && len(raw) > 8 {
				t.Fatalf("the error quotes the URL: %v", err)
			}
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
		again, err := splitSource(s.bare)
		if err != nil {
			t.Fatalf("the bare form %q does not parse again: %v", s.bare, err)
		}
		if !again.creds.Empty() {
			t.Fatalf("the bare form %q still carries credentials %+v", s.bare, again.creds)
		}
	})
}
