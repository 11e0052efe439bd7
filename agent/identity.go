package agent

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/svcplatform/svc/agent/atomicfile"
	"github.com/svcplatform/svc/shared/pki"
)

// Files of the agent's data directory. Key and certificate are mode 0600.
const (
	caFile    = "ca.pem"
	keyFile   = "node.key"
	certFile  = "node.crt"
	stateFile = "agent.json"
)

// ErrNotEnrolled means the data directory holds no identity yet.
var ErrNotEnrolled = errors.New("this host is not enrolled: run `svc agent enroll` first")

// state is what the agent remembers besides its key and certificates.
type state struct {
	NodeID     string   `json:"nodeId"`
	ServerURLs []string `json:"serverUrls"`
	CAHash     string   `json:"caHash"`
}

// identity is the enrolled node: its key pair, the pinned cluster CA and
// the control nodes to talk to. The certificate is swapped on renewal.
type identity struct {
	dir string

	mu    sync.RWMutex
	st    state
	pair  *tls.Certificate
	leaf  *x509.Certificate
	pool  *x509.CertPool
	caPEM []byte
}

// writeFile0600 replaces a file of the data directory durably.
func writeFile0600(path string, data []byte) error { return atomicfile.Write(path, data, 0o600, true) }

// saveIdentity writes a fresh enrollment into dir.
func saveIdentity(dir string, st state, caPEM, keyPEM, certPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	stb, _ := json.MarshalIndent(st, "", "  ")
	for _, f := range []struct {
		name string
		data []byte
	}{{caFile, caPEM}, {keyFile, keyPEM}, {certFile, certPEM}, {stateFile, append(stb, '\n')}} {
		if err := writeFile0600(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// loadIdentity reads the data directory an enrollment wrote.
func loadIdentity(dir string) (*identity, error) {
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotEnrolled
	}
	if err != nil {
		return nil, err
	}
	id := &identity{dir: dir}
	if err := json.Unmarshal(raw, &id.st); err != nil {
		return nil, fmt.Errorf("%s: %w", stateFile, err)
	}
	if id.caPEM, err = os.ReadFile(filepath.Join(dir, caFile)); err != nil {
		return nil, err
	}
	ca, err := pki.ParseCert(id.caPEM)
	if err != nil {
		return nil, err
	}
	id.pool = x509.NewCertPool()
	id.pool.AddCert(ca)
	if err := id.reloadPair(); err != nil {
		return nil, err
	}
	return id, nil
}

func (id *identity) reloadPair() error {
	certPEM, err := os.ReadFile(filepath.Join(id.dir, certFile))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(id.dir, keyFile))
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("node key and certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	id.mu.Lock()
	id.pair, id.leaf = &pair, leaf
	id.mu.Unlock()
	return nil
}

func (id *identity) nodeID() string { return id.st.NodeID }

func (id *identity) certificate() *x509.Certificate {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.leaf
}

func (id *identity) servers() []string {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return append([]string(nil), id.st.ServerURLs...)
}

// setServers remembers the control nodes' agent URLs a control node
// reported, and says whether they changed.
func (id *identity) setServers(urls []string) bool {
	if len(urls) == 0 {
		return false
	}
	id.mu.Lock()
	changed := fmt.Sprint(id.st.ServerURLs) != fmt.Sprint(urls)
	id.st.ServerURLs = append([]string(nil), urls...)
	st := id.st
	id.mu.Unlock()
	if changed {
		b, _ := json.MarshalIndent(st, "", "  ")
		writeFile0600(filepath.Join(id.dir, stateFile), append(b, '\n'))
	}
	return changed
}

// storeRenewed saves a renewed key pair and starts using it.
func (id *identity) storeRenewed(keyPEM, certPEM []byte) error {
	if err := writeFile0600(filepath.Join(id.dir, keyFile), keyPEM); err != nil {
		return err
	}
	if err := writeFile0600(filepath.Join(id.dir, certFile), certPEM); err != nil {
		return err
	}
	return id.reloadPair()
}

// tlsConfig authenticates the control plane by the pinned CA and presents
// the current node certificate.
func (id *identity) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: id.pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			id.mu.RLock()
			defer id.mu.RUnlock()
			return id.pair, nil
		}}
}

// Paths the engine's hook client uses (the node's own credentials).
func (id *identity) certPath() string { return filepath.Join(id.dir, certFile) }
func (id *identity) keyPath() string  { return filepath.Join(id.dir, keyFile) }
func (id *identity) caPath() string   { return filepath.Join(id.dir, caFile) }
