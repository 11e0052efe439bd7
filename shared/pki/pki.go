// Package pki is the cluster's small certificate authority, used by both
// roles: control nodes make the CA once at bootstrap, sign the agent port's
// server certificate and sign node agents' certificate requests; agents make
// their key locally, send a CSR and pin the CA by its hash. Keys are ECDSA
// P-256; certificates name a node by its id in the subject's common name.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"regexp"
	"strings"
	"time"
)

// Lifetimes of the certificates the CA issues.
const (
	CALifetime     = 10 * 365 * 24 * time.Hour
	ClientLifetime = 30 * 24 * time.Hour
	ServerLifetime = 30 * 24 * time.Hour
	// clockSkew backdates NotBefore so a peer whose clock is slightly behind
	// does not refuse a certificate issued a moment ago.
	clockSkew = 5 * time.Minute
)

// AgentOU marks certificates issued to node agents, so a server
// certificate can never pass as an agent's and the other way round.
const AgentOU = "svc-node-agent"

// NodeIDPattern is the shape of a node id a certificate may carry.
var NodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Errors of certificate handling; callers map them to their protocol.
var (
	ErrBadCSR       = errors.New("pki: certificate request is invalid")
	ErrBadCert      = errors.New("pki: certificate is invalid")
	ErrNotAgentCert = errors.New("pki: certificate is not a node agent certificate")
	ErrHashMismatch = errors.New("pki: CA hash does not match")
)

// CA is a loaded certificate authority: its certificate and signing key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// NewKey makes a fresh P-256 private key.
func NewKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// EncodeKey renders a private key as PKCS#8 PEM.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseKey reads a PKCS#8 PEM private key.
func ParseKey(pemBytes []byte) (crypto.Signer, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, errors.New("pki: not a PKCS#8 PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: private key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("pki: private key cannot sign")
	}
	return s, nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// ParseCert reads one PEM certificate.
func ParseCert(pemBytes []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: not a PEM certificate", ErrBadCert)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCert, err)
	}
	return c, nil
}

// NewCA makes a self-signed CA named for the cluster and returns it with
// its private key in PKCS#8 PEM, which the caller seals before storing.
func NewCA(clusterID string, now time.Time) (*CA, []byte, error) {
	key, err := NewKey()
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "svc cluster CA " + clusterID, Organization: []string{"svc"}},
		NotBefore:    now.Add(-clockSkew), NotAfter: now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	ca, err := LoadCA(encodeCert(der), keyPEM)
	return ca, keyPEM, err
}

// LoadCA pairs a CA certificate with its key and checks they belong
// together.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%w: not a CA certificate", ErrBadCert)
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("pki: CA key does not match the CA certificate")
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: key}, nil
}

// Pool is a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Hash is the CA's pin: "sha256:" and the hex SHA-256 of its
// SubjectPublicKeyInfo, as kubeadm pins a cluster CA.
func Hash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckHash compares a CA certificate with a pin given by an operator.
func CheckHash(cert *x509.Certificate, pin string) error {
	want := strings.ToLower(strings.TrimSpace(pin))
	if got := Hash(cert); got != want {
		return fmt.Errorf("%w: the server's CA is %s, expected %s", ErrHashMismatch, got, want)
	}
	return nil
}

// NewCSR makes a certificate request for a node id, signed by key.
func NewCSR(key crypto.Signer, nodeID string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: nodeID, OrganizationalUnit: []string{AgentOU}},
	}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// ParseCSR reads and checks a PEM certificate request from the network:
// its self-signature must verify and its key must be ECDSA P-256 or P-384.
// The subject is not trusted; the CA sets its own.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	if len(pemBytes) > 16<<10 {
		return nil, fmt.Errorf("%w: larger than 16 KiB", ErrBadCSR)
	}
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("%w: not a PEM certificate request", ErrBadCSR)
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCSR, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: signature: %w", ErrBadCSR, err)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return nil, fmt.Errorf("%w: ECDSA keys must use P-256 or P-384", ErrBadCSR)
		}
	default:
		return nil, fmt.Errorf("%w: the key must be ECDSA P-256 or P-384", ErrBadCSR)
	}
	return csr, nil
}

// SignClient issues a node agent certificate for nodeID from a CSR. The
// node id comes from the caller (the enrollment code or the presented
// certificate), never from the request's subject.
func (ca *CA) SignClient(csrPEM []byte, nodeID string, now time.Time, lifetime time.Duration) ([]byte, *x509.Certificate, error) {
	if !NodeIDPattern.MatchString(nodeID) {
		return nil, nil, fmt.Errorf("pki: node id %q is not valid", nodeID)
	}
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: nodeID, OrganizationalUnit: []string{AgentOU}, Organization: []string{"svc"}},
		NotBefore:    now.Add(-clockSkew), NotAfter: now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.sign(tmpl, csr.PublicKey)
}

// SignServer issues the agent port's server certificate for the given host
// names and addresses.
func (ca *CA) SignServer(pub crypto.PublicKey, hosts []string, now time.Time, lifetime time.Duration) ([]byte, *x509.Certificate, error) {
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "svc control node", Organization: []string{"svc"}},
		NotBefore:    now.Add(-clockSkew), NotAfter: now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.sign(tmpl, pub)
}

func (ca *CA) sign(tmpl *x509.Certificate, pub crypto.PublicKey) ([]byte, *x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), cert, nil
}

// AgentNodeID returns the node id a verified agent certificate names.
func AgentNodeID(cert *x509.Certificate) (string, error) {
	isAgent := false
	for _, ou := range cert.Subject.OrganizationalUnit {
		isAgent = isAgent || ou == AgentOU
	}
	clientAuth := false
	for _, u := range cert.ExtKeyUsage {
		clientAuth = clientAuth || u == x509.ExtKeyUsageClientAuth
	}
	if !isAgent || !clientAuth || !NodeIDPattern.MatchString(cert.Subject.CommonName) {
		return "", ErrNotAgentCert
	}
	return cert.Subject.CommonName, nil
}

// RenewAt is when a certificate should be renewed: after two thirds of its
// life, so a renewal that fails has a third of the lifetime left to retry.
func RenewAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(life * 2 / 3)
}

// SerialHex is a certificate's serial number as lower-case hex, the form
// records and logs use.
func SerialHex(cert *x509.Certificate) string { return cert.SerialNumber.Text(16) }
