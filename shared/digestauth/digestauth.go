// Package digestauth verifies HTTP/RTSP Digest authentication responses
// (RFC 2617 and RFC 7616, MD5 and SHA-256, with and without qop=auth) as a
// server does. The control plane uses it to prove stored RTSP credentials
// work; the media engine's RTSP server checks logins with it.
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

// Verify checks an Authorization header value ("Digest ...") for method
// against the password, the server's realm and the nonce it issued.
func Verify(header, method, password, realm, nonce string) (username string, err error) {
	if !digest.IsDigest(header) {
		return "", fmt.Errorf("%w: not a Digest header", ErrDenied)
	}
	c, err := digest.ParseCredentials(header)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrDenied, err)
	}
	if c.Realm != realm || c.Nonce != nonce {
		return "", fmt.Errorf("%w: realm or nonce does not match", ErrDenied)
	}
	if c.QOP != "" && c.QOP != "auth" {
		return "", fmt.Errorf("%w: unsupported qop %q", ErrDenied, c.QOP)
	}
	nc := ""
	if c.QOP != "" {
		nc = fmt.Sprintf("%08x", c.Nc)
	}
	want, err := Expected(c.Algorithm, c.Username, realm, password, method, c.URI, nonce, nc, c.Cnonce, c.QOP)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrDenied, err)
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(c.Response))) != 1 {
		return "", ErrDenied
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
