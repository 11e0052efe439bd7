package digestauth

import (
	"errors"
	"testing"
)

// RFC 2617 section 3.5's worked example.
func TestRFC2617Example(t *testing.T) {
	got, err := Expected("MD5", "Mufasa", "testrealm@host.com", "Circle Of Life", "GET", "/dir/index.html",
		"dcd98b7102dd2f0e8b11d0f600bfb0c093", "00000001", "0a4f113b", "auth")
	if err != nil || got != "6629fae49393a05397450978507c4ef1" {
		t.Fatalf("got %s %v", got, err)
	}
}

func TestBuildThenVerify(t *testing.T) {
	for _, alg := range []string{"MD5", "SHA-256"} {
		for _, qop := range []string{"", "auth"} {
			hdr, err := Build(alg, qop, "svc", "n0nce", "DESCRIBE", "rtsp://cam/stream", "alice", "s3cret-pass")
			if err != nil {
				t.Fatal(err)
			}
			if u, err := Verify(hdr, "DESCRIBE", "s3cret-pass", "svc", "n0nce"); err != nil || u != "alice" {
				t.Fatalf("%s/%q: %v", alg, qop, err)
			}
			for name, check := range map[string]func() error{
				"wrong password": func() error { _, err := Verify(hdr, "DESCRIBE", "other", "svc", "n0nce"); return err },
				"wrong method":   func() error { _, err := Verify(hdr, "PLAY", "s3cret-pass", "svc", "n0nce"); return err },
				"wrong nonce":    func() error { _, err := Verify(hdr, "DESCRIBE", "s3cret-pass", "svc", "other"); return err },
				"wrong realm":    func() error { _, err := Verify(hdr, "DESCRIBE", "s3cret-pass", "x", "n0nce"); return err },
			} {
				if err := check(); !errors.Is(err, ErrDenied) {
					t.Errorf("%s/%q %s: %v", alg, qop, name, err)
				}
			}
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(`Digest username="a", realm="svc", nonce="n", uri="/", response="00", qop=auth, nc=00000001, cnonce="c"`)
	f.Add(`Digest username="a"`)
	f.Add(`Basic Zm9vOmJhcg==`)
	f.Fuzz(func(t *testing.T, hdr string) {
		Verify(hdr, "DESCRIBE", "pw", "svc", "n") // must not panic
	})
}

// A device that writes its nonce count in its own way (here "1") hashes
// that text; the check uses it as sent.
func TestNonceCountAsSent(t *testing.T) {
	resp, _ := Expected("MD5", "34020000001320000001", "3402000000", "pw", "REGISTER", "sip:x@3402000000", "n", "1", "c", "auth")
	hdr := `Digest username="34020000001320000001", realm="3402000000", nonce="n", uri="sip:x@3402000000", response="` + resp + `", qop=auth, nc=1, cnonce="c"`
	c, err := Parse(hdr)
	if err != nil || c.NC != "1" {
		t.Fatalf("parse: %+v %v", c, err)
	}
	if err := c.Check("REGISTER", "pw"); err != nil {
		t.Fatalf("check with the nonce count as sent: %v", err)
	}
	if _, err := Parse(`Digest username="a", nonce="n", uri="/", response="00", algorithm=SHA-512`); !errors.Is(err, ErrDenied) {
		t.Fatalf("an unknown algorithm: %v", err)
	}
}
