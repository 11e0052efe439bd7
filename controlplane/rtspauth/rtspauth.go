// Package rtspauth keeps the RTSP credentials the media engines' RTSP
// servers accept, per media server and user name. Passwords are sealed with
// the cluster key (bound to their record) and never returned; `Test` proves
// a stored credential produces a Digest response an RTSP server accepts.
package rtspauth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/digestauth"
)

// KeyPrefix holds /security/rtsp-auth/<mediaServerId>/<username>.
const KeyPrefix = "/security/rtsp-auth/"

// Errors mapped to contract codes at the boundary.
var (
	ErrInvalid  = fault.New(fault.Invalid, "invalid_body", "invalid RTSP credential request")
	ErrNotFound = fault.New(fault.NotFound, "not_found", "no such RTSP credential")
)

// Credential is the stored record.
type Credential struct {
	MediaServerID string    `json:"mediaServerId"`
	Username      string    `json:"username"`
	Realm         string    `json:"realm"`
	Sealed        string    `json:"sealed"`
	UpdatedAt     time.Time `json:"updatedAt"`
	UpdatedBy     string    `json:"updatedBy"`
}

// Service stores credentials in the replicated store.
type Service struct {
	Store store.Store
	Keys  *keyring.Keyring
}

var (
	serverRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	userRe   = regexp.MustCompile(`^[^:\s/]{1,64}$`)
)

func key(server, user string) (string, error) {
	if !serverRe.MatchString(server) {
		return "", fmt.Errorf("%w: media server id %q", ErrInvalid, server)
	}
	if !userRe.MatchString(user) {
		return "", fmt.Errorf("%w: user name %q (1-64 characters, no colon, slash or space)", ErrInvalid, user)
	}
	return KeyPrefix + server + "/" + user, nil
}

// Save creates or replaces a credential.
func (s *Service) Save(ctx context.Context, a audit.Actor, server, user, password, realm string) (*Credential, error) {
	k, err := key(server, user)
	if err != nil {
		return nil, err
	}
	if n := len(password); n < 8 || n > 128 {
		return nil, fmt.Errorf("%w: password must be 8-128 characters", ErrInvalid)
	}
	if realm == "" {
		realm = "svc"
	}
	if len(realm) > 128 || strings.ContainsAny(realm, "\"\r\n") {
		return nil, fmt.Errorf("%w: realm must be 1-128 characters without quotes or line breaks", ErrInvalid)
	}
	sealed, err := s.Keys.Seal([]byte(password), []byte(k))
	if err != nil {
		return nil, err
	}
	c := &Credential{MediaServerID: server, Username: user, Realm: realm, Sealed: sealed, UpdatedAt: time.Now().UTC(), UpdatedBy: a.Type + ":" + a.ID}
	val, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	aud, err := a.Success("security.rtsp_credential.saved", server+"/"+user, "")
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(k, val), aud}}); err != nil {
		return nil, err
	}
	return c, nil
}

// List returns credentials, optionally for one server and/or user.
func (s *Service) List(ctx context.Context, server, user string) ([]Credential, error) {
	prefix := KeyPrefix
	if server != "" {
		prefix += server + "/"
	}
	resp, err := s.Store.Range(ctx, prefix, store.RangeOptions{End: store.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	out := []Credential{}
	for _, kv := range resp.KVs {
		if c, err := store.Decode[Credential](kv); err == nil && (user == "" || c.Username == user) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Delete removes a credential.
func (s *Service) Delete(ctx context.Context, a audit.Actor, server, user string) error {
	k, err := key(server, user)
	if err != nil {
		return err
	}
	aud, err := a.Success("security.rtsp_credential.deleted", server+"/"+user, "")
	if err != nil {
		return err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{{Key: k, Target: store.TargetVersion, Result: store.Greater}},
		Then: []store.Op{store.Delete(k), aud}})
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %s/%s", ErrNotFound, server, user)
	}
	return nil
}

// Password returns the stored password of a media server's RTSP user, for
// the engine's Digest check (the on_rtsp_auth hook, answered over the
// node's mutual TLS); ErrNotFound when there is no such credential.
func (s *Service) Password(ctx context.Context, server, user string) (string, error) {
	_, password, err := s.open(ctx, server, user)
	return string(password), err
}

func (s *Service) open(ctx context.Context, server, user string) (*Credential, []byte, error) {
	k, err := key(server, user)
	if err != nil {
		return nil, nil, err
	}
	kv, _, err := store.Get(ctx, s.Store, k, store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, fmt.Errorf("%w: %s/%s", ErrNotFound, server, user)
	}
	c, err := store.Decode[Credential](kv)
	if err != nil {
		return nil, nil, err
	}
	password, err := s.Keys.Open(c.Sealed, []byte(k))
	return &c, password, err
}

// TestResult is what Test proves.
type TestResult struct {
	Realm, Nonce, Algorithm, QOP, Header string
	Verified                             bool
}

// Test builds the Authorization header a client holding the stored password
// sends for method and uri, then checks it exactly as an RTSP server does.
func (s *Service) Test(ctx context.Context, server, user, method, uri, alg, qop, nonce string) (*TestResult, error) {
	c, password, err := s.open(ctx, server, user)
	if err != nil {
		return nil, err
	}
	if method == "" {
		method = "DESCRIBE"
	}
	if alg == "" {
		alg = "MD5"
	}
	if qop == "none" {
		qop = ""
	}
	if nonce == "" {
		var b [16]byte
		rand.Read(b[:])
		nonce = hex.EncodeToString(b[:])
	}
	hdr, err := digestauth.Build(alg, qop, c.Realm, nonce, method, uri, user, string(password))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	_, verr := digestauth.Verify(hdr, method, string(password), c.Realm, nonce)
	if qop == "" {
		qop = "none"
	}
	return &TestResult{Realm: c.Realm, Nonce: nonce, Algorithm: alg, QOP: qop, Header: hdr, Verified: verr == nil}, nil
}
