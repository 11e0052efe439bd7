// Package clusterca keeps the cluster's certificate authority in the
// replicated store: the first ready leader makes it (a compare on the key's
// absence means two leaders can never make two), its private key sealed with
// the cluster keyring. Every control node loads it to sign the agent port's
// server certificate and node agents' certificates.
package clusterca

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/pki"
)

// Key holds the CA record.
const Key = "/cluster/pki/ca"

// ErrNotReady means the first leader has not made the CA yet.
var ErrNotReady = fault.NewRetryable(fault.Unavailable, "unavailable", "the cluster CA does not exist yet")

// Record is the stored CA: the certificate in clear, the key sealed.
type Record struct {
	CertPEM   string    `json:"certPem"`
	KeySealed string    `json:"keySealed"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"createdAt"`
}

// Authority loads the CA once and signs with it.
type Authority struct {
	Store store.Store
	Keys  *keyring.Keyring

	mu sync.Mutex
	ca *pki.CA
}

// Ensure makes the CA if the store has none. It is a leader task; the
// compare on absence makes a second leader's attempt a no-op.
func (a *Authority) Ensure(ctx context.Context, clusterID string) error {
	kv, _, err := store.Get(ctx, a.Store, Key, store.Local)
	if err != nil || kv != nil {
		return err
	}
	ca, keyPEM, err := pki.NewCA(clusterID, time.Now().UTC())
	if err != nil {
		return err
	}
	sealed, err := a.Keys.Seal(keyPEM, []byte(Key))
	if err != nil {
		return err
	}
	val, _ := json.Marshal(Record{CertPEM: string(ca.CertPEM), KeySealed: sealed, Hash: pki.Hash(ca.Cert), CreatedAt: time.Now().UTC()})
	_, err = a.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(Key)}, Then: []store.Op{store.Put(Key, val)}})
	return err
}

// CA returns the loaded CA, reading and unsealing it the first time.
func (a *Authority) CA(ctx context.Context) (*pki.CA, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ca != nil {
		return a.ca, nil
	}
	kv, _, err := store.Get(ctx, a.Store, Key, store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, ErrNotReady
	}
	rec, err := store.Decode[Record](kv)
	if err != nil {
		return nil, fmt.Errorf("cluster CA record: %w", err)
	}
	keyPEM, err := a.Keys.Open(rec.KeySealed, []byte(Key))
	if err != nil {
		return nil, fmt.Errorf("cluster CA key: %w", err)
	}
	ca, err := pki.LoadCA([]byte(rec.CertPEM), keyPEM)
	if err != nil {
		return nil, err
	}
	a.ca = ca
	return ca, nil
}

// Wait returns the CA once it exists, polling while the first leader makes
// it.
func (a *Authority) Wait(ctx context.Context) (*pki.CA, error) {
	for {
		ca, err := a.CA(ctx)
		if !errors.Is(err, ErrNotReady) {
			return ca, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ServerCertificates keeps the agent port's server certificate fresh: it
// signs one for hosts at first use and again at two thirds of its life. The
// key never leaves this process.
type ServerCertificates struct {
	Authority *Authority
	Hosts     []string

	mu   sync.Mutex
	cert *tls.Certificate
	due  time.Time
}

// Get is a tls.Config.GetCertificate.
func (s *ServerCertificates) Get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil && time.Now().Before(s.due) {
		return s.cert, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ca, err := s.Authority.CA(ctx)
	if err != nil {
		return nil, err
	}
	key, err := pki.NewKey()
	if err != nil {
		return nil, err
	}
	certPEM, cert, err := ca.SignServer(key.Public(), s.Hosts, time.Now(), pki.ServerLifetime)
	if err != nil {
		return nil, err
	}
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	s.cert, s.due = &pair, pki.RenewAt(cert)
	return s.cert, nil
}
