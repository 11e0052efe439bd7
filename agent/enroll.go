package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/pki"
)

// EnrollOptions are the flags of `svc agent enroll`.
type EnrollOptions struct {
	Server, Code, CAHash, DataDir, Hostname string
	// Force replaces an existing enrollment in DataDir.
	Force bool
}

// Enroll pins the cluster CA, makes the node key here, sends a CSR with
// the one-time code and stores key, certificate and CA (mode 0600). The
// key never leaves the host.
func Enroll(ctx context.Context, o EnrollOptions) (nodeID string, err error) {
	u, err := url.Parse(o.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("--server %q must be the https URL of the agent port", o.Server)
	}
	base := strings.TrimRight(o.Server, "/")
	if o.Code == "" || !strings.HasPrefix(o.CAHash, "sha256:") {
		return "", errors.New("--code and --ca-hash sha256:HEX are required (from POST /api/v2/system/lifecycle/agents/{nodeId}/enrollment)")
	}
	if _, err := os.Stat(filepath.Join(o.DataDir, stateFile)); err == nil && !o.Force {
		return "", fmt.Errorf("%s already holds an enrollment; use --force to replace it", o.DataDir)
	}
	// 1. Fetch the CA without trusting the connection, and trust it only
	// if it matches the operator's pin.
	insecure := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	caPEM, err := fetch(ctx, insecure, base+agentapi.PathCA)
	if err != nil {
		return "", fmt.Errorf("reading the cluster CA: %w", err)
	}
	ca, err := pki.ParseCert(caPEM)
	if err != nil {
		return "", err
	}
	if err := pki.CheckHash(ca, o.CAHash); err != nil {
		return "", err
	}
	// 2. From here on the server must prove it holds a certificate of that
	// CA for the host we dialled.
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pinned := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	key, err := pki.NewKey()
	if err != nil {
		return "", err
	}
	host := o.Hostname
	if host == "" {
		host, _ = os.Hostname()
	}
	csr, err := pki.NewCSR(key, "enrolling")
	if err != nil {
		return "", err
	}
	body, _ := json.Marshal(agentapi.EnrollRequest{Code: o.Code, CSR: string(csr), Hostname: host, AgentVersion: buildinfo.Version})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+agentapi.PathEnroll, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := pinned.Do(req)
	if err != nil {
		return "", fmt.Errorf("enrolling: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, agentapi.MaxBody))
	if resp.StatusCode != http.StatusOK {
		return "", remoteError(resp.StatusCode, data)
	}
	var er agentapi.EnrollResponse
	if err := json.Unmarshal(data, &er); err != nil {
		return "", err
	}
	cert, err := pki.ParseCert([]byte(er.Certificate))
	if err != nil {
		return "", err
	}
	if id, err := pki.AgentNodeID(cert); err != nil || id != er.NodeID {
		return "", fmt.Errorf("the control plane issued a certificate for %q, not for node %q", id, er.NodeID)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return "", fmt.Errorf("the issued certificate does not chain to the pinned CA: %w", err)
	}
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		return "", err
	}
	servers := er.ServerURLs
	if len(servers) == 0 {
		servers = []string{base}
	}
	if err := saveIdentity(o.DataDir, state{NodeID: er.NodeID, ServerURLs: servers, CAHash: pki.Hash(ca)}, caPEM, keyPEM, []byte(er.Certificate)); err != nil {
		return "", err
	}
	return er.NodeID, nil
}

func fetch(ctx context.Context, c *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", u, resp.Status)
	}
	return data, nil
}
