// Package digestauth verifies HTTP, RTSP and SIP Digest authentication
// responses (RFC 2617 and RFC 7616, MD5 and SHA-256, with and without
// qop=auth) as a server does. The control plane uses it to prove stored
// RTSP credentials work and to check GB28181 devices' REGISTERs; the media
// engine's RTSP server checks logins with it.
package digestauth

import (
	"crypto/md5"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"

	"github.com/icholy/digest"
)

// ErrDenied means the response does not prove knowledge of the password.
var ErrDenied = errors.New("digest authentication failed")

func hasher(alg string) (func() hash.Hash, error) {
	switch strings.ToUpper(alg) {
	case "", "MD5":
		return md5.New, nil
	case "SHA-256":
		return sha256.New, nil
	}
	return nil, fmt.Errorf("unsupported digest algorithm %q", alg)
}

func h(newHash func() hash.Hash, parts ...string) string {
	x := newHash()
	x.Write([]byte(strings.Join(parts, ":")))
	return hex.EncodeToString(x.Sum(nil))
}

// Expected computes the response a client holding password must send.
func Expected(alg, username, realm, password, method, uri, nonce, nc, cnonce, qop string) (string, error) {
	newHash, err := hasher(alg)
	if err != nil {
		return "", err
	}
	ha1 := h(newHash, username, realm, password)
	ha2 := h(newHash, method, uri)
	if qop == "" {
		return h(newHash, ha1, nonce, ha2), nil
	}
	return h(newHash, ha1, nonce, nc, cnonce, qop, ha2), nil
}

// Credentials is a parsed Digest Authorization header, every value as the
// client sent it: the response hashes the nonce count's own text, which
// some devices do not write as eight hex digits.
type Credentials struct {
	Username, Realm, Nonce, URI, Response, Algorithm, QOP, NC, CNonce string
}

// Parse reads an Authorization header value ("Digest ..."). It needs a
// username, nonce, uri and response, and an algorithm this package
// computes.
func Parse(header string) (Credentials, error) {
	header = strings.TrimSpace(header)
	if len(header) < 7 || !strings.EqualFold(header[:7], "digest ") {
		return Credentials{}, fmt.Errorf("%w: not a Digest header", ErrDenied)
	}
	var c Credentials
	for _, part := range splitParams(header[7:]) {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "username":
			c.Username = v
		case "realm":
			c.Realm = v
		case "nonce":
			c.Nonce = v
		case "uri":
			c.URI = v
		case "response":
			c.Response = v
		case "algorithm":
			c.Algorithm = v
		case "qop":
			c.QOP = v
		case "nc":
			c.NC = v
		case "cnonce":
			c.CNonce = v
		}
	}
	if c.Username == "" || c.Nonce == "" || c.URI == "" || c.Response == "" {
		return Credentials{}, fmt.Errorf("%w: the header lacks username, nonce, uri or response", ErrDenied)
	}
	if _, err := hasher(c.Algorithm); err != nil {
		return Credentials{}, fmt.Errorf("%w: %w", ErrDenied, err)
	}
	if c.QOP != "" && c.QOP != "auth" {
		return Credentials{}, fmt.Errorf("%w: unsupported qop %q", ErrDenied, c.QOP)
	}
	return c, nil
}

// splitParams splits at commas outside quotes.
func splitParams(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// Check reports whether the response proves knowledge of password for
// method (ErrDenied when it does not).
func (c Credentials) Check(method, password string) error {
	want, err := Expected(c.Algorithm, c.Username, c.Realm, password, method, c.URI, c.Nonce, c.NC, c.CNonce, c.QOP)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDenied, err)
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(c.Response))) != 1 {
		return ErrDenied
	}
	return nil
}

// Verify checks an Authorization header value ("Digest ...") for method
// against the password, the server's realm and the nonce it issued.
func Verify(header, method, password, realm, nonce string) (username string, err error) {
	c, err := Parse(header)
	if err != nil {
		return "", err
	}
	if c.Realm != realm || c.Nonce != nonce {
		return "", fmt.Errorf("%w: realm or nonce does not match", ErrDenied)
	}
	if err := c.Check(method, password); err != nil {
		return "", err
	}
	return c.Username, nil
}

// Build returns the Authorization header value a client sends for a
// challenge with the given parameters (qop "" or "auth").
func Build(alg, qop, realm, nonce, method, uri, username, password string) (string, error) {
	chal := &digest.Challenge{Realm: realm, Nonce: nonce, Algorithm: alg}
	if qop != "" {
		chal.QOP = []string{qop}
	}
	cred, err := digest.Digest(chal, digest.Options{Method: method, URI: uri, Username: username, Password: password, Count: 1})
	if err != nil {
		return "", err
	}
	return cred.String(), nil
}
