package rtspclient

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/icholy/digest"
	"github.com/svcplatform/svc/mediaengine/rtsp"
)

// clientAuth answers a server's 401 challenge: Digest (MD5 or SHA-256,
// with or without qop=auth) when offered, Basic otherwise, and Basic only
// when allowBasic is set: over plain rtsp:// it hands the password to
// whoever answers (a server the URL was changed to point at, or anyone on
// the path). The strongest offered scheme wins, whatever order the server
// lists them in.
type clientAuth struct {
	user, password string
	allowBasic     bool
	basic          bool
	challenge      *digest.Challenge
	count          int
}

// has reports whether the URL carried credentials at all.
func (a *clientAuth) has() bool { return a.user != "" || a.password != "" }

// ready reports whether a challenge has been taken.
func (a *clientAuth) ready() bool { return a.basic || a.challenge != nil }

// challenged takes the WWW-Authenticate values of a 401.
func (a *clientAuth) challenged(values []string) error {
	var best *digest.Challenge
	rank := func(c *digest.Challenge) int {
		switch strings.ToUpper(c.Algorithm) {
		case "SHA-256":
			return 2
		case "", "MD5":
			return 1
		}
		return 0
	}
	basic := false
	for _, v := range values {
		if digest.IsDigest(v) {
			c, err := digest.ParseChallenge(v)
			if err != nil || !digest.CanDigest(c) || rank(c) == 0 {
				continue
			}
			if best == nil || rank(c) > rank(best) {
				best = c
			}
			continue
		}
		if scheme, _, _ := strings.Cut(strings.TrimSpace(v), " "); strings.EqualFold(scheme, "Basic") {
			basic = true
		}
	}
	switch {
	case best != nil:
		a.challenge, a.basic, a.count = best, false, 0
	case basic && !a.allowBasic:
		return rtsp.ErrBasicRefused
	case basic:
		a.challenge, a.basic = nil, true
	default:
		return fmt.Errorf("%w: no supported scheme in %q", rtsp.ErrUnauthorized, strings.Join(values, " | "))
	}
	return nil
}

// header returns the Authorization value for a request.
func (a *clientAuth) header(method, uri string) (string, error) {
	if a.basic {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(a.user+":"+a.password)), nil
	}
	a.count++
	cred, err := digest.Digest(a.challenge, digest.Options{Method: method, URI: uri, Username: a.user, Password: a.password, Count: a.count})
	if err != nil {
		return "", fmt.Errorf("%w: %w", rtsp.ErrUnauthorized, err)
	}
	return cred.String(), nil
}
