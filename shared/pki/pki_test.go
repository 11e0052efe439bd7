package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func mustCA(t *testing.T) (*CA, []byte) {
	t.Helper()
	ca, keyPEM, err := NewCA("c1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca, keyPEM
}

func TestCAIssuesAgentAndServerCertificates(t *testing.T) {
	ca, keyPEM := mustCA(t)
	again, err := LoadCA(ca.CertPEM, keyPEM)
	if err != nil || !again.Cert.Equal(ca.Cert) {
		t.Fatalf("reload CA: %v", err)
	}
	if !strings.HasPrefix(Hash(ca.Cert), "sha256:") || len(Hash(ca.Cert)) != 7+64 {
		t.Fatalf("hash %q", Hash(ca.Cert))
	}
	if err := CheckHash(ca.Cert, strings.ToUpper(Hash(ca.Cert))); err != nil {
		t.Fatalf("pin in upper case: %v", err)
	}
	other, _ := mustCA(t)
	if err := CheckHash(ca.Cert, Hash(other.Cert)); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("foreign pin: %v", err)
	}

	key, _ := NewKey()
	csr, err := NewCSR(key, "whatever-the-agent-asks")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	certPEM, cert, err := ca.SignClient(csr, "media-1", now, ClientLifetime)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := AgentNodeID(cert); err != nil || id != "media-1" {
		t.Fatalf("node id %q %v: the CA must name the node it was told, not the CSR's subject", id, err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	if got := RenewAt(cert); got.Before(now.Add(19*24*time.Hour)) || got.After(now.Add(21*24*time.Hour)) {
		t.Fatalf("renew at %s, want two thirds of 30 days", got)
	}
	srvKey, _ := NewKey()
	_, srvCert, err := ca.SignServer(srvKey.Public(), []string{"127.0.0.1", "cp.example"}, now, ServerLifetime)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AgentNodeID(srvCert); !errors.Is(err, ErrNotAgentCert) {
		t.Fatal("a server certificate passed as an agent's")
	}
	if _, err := srvCert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "cp.example"}); err != nil {
		t.Fatal(err)
	}

	// The pair works for mutual TLS on loopback.
	keyPEM2, _ := EncodeKey(key)
	clientPair, err := tls.X509KeyPair(certPEM, keyPEM2)
	if err != nil {
		t.Fatal(err)
	}
	srvPEM, _, _ := ca.SignServer(srvKey.Public(), []string{"127.0.0.1"}, now, ServerLifetime)
	srvKeyPEM, _ := EncodeKey(srvKey)
	srvPair, _ := tls.X509KeyPair(srvPEM, srvKeyPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{srvPair}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			got <- err.Error()
			return
		}
		id, _ := AgentNodeID(tc.ConnectionState().PeerCertificates[0])
		got <- id
		io.Copy(io.Discard, c)
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{clientPair}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if id := <-got; id != "media-1" {
		t.Fatalf("server saw %q", id)
	}
}

func TestLoadCARefusesMismatchedKey(t *testing.T) {
	ca, _ := mustCA(t)
	_, otherKey := mustCA(t)
	if _, err := LoadCA(ca.CertPEM, otherKey); err == nil {
		t.Fatal("a CA loaded with another CA's key")
	}
}

func TestParseCSRRefusesBadRequests(t *testing.T) {
	key, _ := NewKey()
	good, _ := NewCSR(key, "n1")
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaDER, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "n1"}}, rsaKey)
	tampered := []byte(strings.Replace(string(good), "A", "B", 1))
	b, _ := pem.Decode(good)
	b.Bytes[len(b.Bytes)-5] ^= 0xff
	badSig := pem.EncodeToMemory(b)
	cases := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"good", good, true},
		{"empty", nil, false},
		{"garbage", []byte("hello"), false},
		{"certificate instead", mustCAPEM(t), false},
		{"rsa key", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: rsaDER}), false},
		{"tampered base64", tampered, false},
		{"bad signature", badSig, false},
		{"huge", []byte(strings.Repeat("x", 20<<10)), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCSR(c.in)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if err != nil && !errors.Is(err, ErrBadCSR) {
				t.Fatalf("err %v is not ErrBadCSR", err)
			}
		})
	}
}

func mustCAPEM(t *testing.T) []byte {
	ca, _ := mustCA(t)
	return ca.CertPEM
}

func TestSignServerTakesIPsAndNames(t *testing.T) {
	ca, _ := mustCA(t)
	k, _ := NewKey()
	_, c, err := ca.SignServer(k.Public(), []string{"::1", "localhost", ""}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(net.ParseIP("::1")) || len(c.DNSNames) != 1 {
		t.Fatalf("SANs %v %v", c.IPAddresses, c.DNSNames)
	}
}

// FuzzParseCSR feeds arbitrary bytes to the parser agents' requests go
// through; it must never panic and only accept what verifies.
func FuzzParseCSR(f *testing.F) {
	key, _ := NewKey()
	good, _ := NewCSR(key, "n1")
	f.Add(good)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		csr, err := ParseCSR(in)
		if err == nil && csr.CheckSignature() != nil {
			t.Fatal("accepted a request whose signature does not verify")
		}
	})
}
