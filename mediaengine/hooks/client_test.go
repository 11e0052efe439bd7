package hooks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/shared/engineapi"
)

// receiver is a real HTTP hook receiver that records what it got and
// answers per hook name.
type receiver struct {
	mu     sync.Mutex
	got    map[string][]map[string]any
	auth   []string
	answer func(name string, body map[string]any) (int, any, time.Duration)
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path[1:]
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	rc.mu.Lock()
	rc.got[name] = append(rc.got[name], body)
	rc.auth = append(rc.auth, r.Header.Get("Authorization"))
	rc.mu.Unlock()
	status, ans, delay := rc.answer(name, body)
	time.Sleep(delay)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(ans)
}

func (rc *receiver) count(name string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got[name])
}

func newClient(t *testing.T, url string, mutate func(*engineapi.Config)) *Client {
	t.Helper()
	cfg := engineapi.Defaults()
	cfg.NodeID, cfg.MediaServerID = "n1", "ms1"
	cfg.Hooks.URL = url
	cfg.Hooks.Timeout = engineapi.Duration(300 * time.Millisecond)
	cfg.Hooks.AllowCacheTTL = engineapi.Duration(time.Minute)
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func play(ticket string) engineapi.PlayHook {
	return engineapi.PlayHook{StreamRef: engineapi.StreamRef{Vhost: "__defaultVhost__", App: "live", Stream: "cam"},
		Protocol: "http-flv", RemoteAddr: "127.0.0.1:5000", Params: map[string]string{"svc_ticket": ticket}}
}

func TestPlayGate(t *testing.T) {
	rc := &receiver{got: map[string][]map[string]any{}, answer: func(name string, body map[string]any) (int, any, time.Duration) {
		params, _ := body["params"].(map[string]any)
		switch params["svc_ticket"] {
		case "good":
			return 200, engineapi.HookAnswer{Allow: true, LeaseID: "lease-1"}, 0
		case "slow":
			return 200, engineapi.HookAnswer{Allow: true}, time.Second
		case "broken":
			return 500, nil, 0
		case "garbage":
			return 200, "yes please", 0
		}
		return 200, engineapi.HookAnswer{Allow: false, Reason: "ticket unknown"}, 0
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	dir := t.TempDir()
	secret := filepath.Join(dir, "hook-secret")
	os.WriteFile(secret, []byte("hook-s3cret\n"), 0o600)
	c := newClient(t, srv.URL, func(cfg *engineapi.Config) { cfg.Hooks.SecretFile = secret })
	ctx := context.Background()

	for _, tc := range []struct {
		ticket  string
		allow   bool
		wantErr error
	}{
		{"good", true, nil},
		{"bad", false, nil},
		{"slow", false, ErrTimeout},
		{"broken", false, ErrStatus},
		{"garbage", false, ErrAnswer},
	} {
		t.Run(tc.ticket, func(t *testing.T) {
			ans, err := c.AllowPlay(ctx, play(tc.ticket))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || ans.Allow {
					t.Fatalf("answer %+v, %v; want a refusal with %v", ans, err, tc.wantErr)
				}
				return
			}
			if err != nil || ans.Allow != tc.allow {
				t.Fatalf("answer %+v, %v", ans, err)
			}
		})
	}
	// The positive answer is cached; the negative one is asked again.
	before := rc.count(engineapi.HookOnPlay)
	if ans, err := c.AllowPlay(ctx, play("good")); err != nil || !ans.Allow || ans.LeaseID != "lease-1" {
		t.Fatalf("cached answer %+v, %v", ans, err)
	}
	c.AllowPlay(ctx, play("bad"))
	if got := rc.count(engineapi.HookOnPlay) - before; got != 1 {
		t.Fatalf("%d calls after the cache, want 1 (the denied ticket only)", got)
	}
	rc.mu.Lock()
	first := rc.got[engineapi.HookOnPlay][0]
	auth := rc.auth[0]
	rc.mu.Unlock()
	if first["mediaServerId"] != "ms1" || first["app"] != "live" || first["protocol"] != "http-flv" || auth != "Bearer hook-s3cret" {
		t.Fatalf("hook body %v, authorization %q", first, auth)
	}
}

func TestEventHooksAndNoURL(t *testing.T) {
	closed := make(chan struct{})
	rc := &receiver{got: map[string][]map[string]any{}, answer: func(name string, _ map[string]any) (int, any, time.Duration) {
		return 200, engineapi.HookAnswer{Close: name == engineapi.HookOnStreamNoneReader}, 0
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	ref := engineapi.StreamRef{Vhost: "__defaultVhost__", App: "live", Stream: "cam"}
	c.StreamChanged(engineapi.StreamChangedHook{StreamRef: ref, Registered: true, Schemas: []string{"http-flv"}})
	c.StreamNoneReader(engineapi.StreamNoneReaderHook{StreamRef: ref}, func() { close(closed) })
	c.FlowReport(engineapi.FlowReportHook{Players: []engineapi.PlayerFlow{{Final: true}}})
	c.Keepalive(engineapi.Stats{Streams: 1})
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("the none-reader answer's close was not acted on")
	}
	c.Close()
	for _, name := range []string{engineapi.HookOnStreamChanged, engineapi.HookOnStreamNoneReader, engineapi.HookOnFlowReport, engineapi.HookOnServerKeepalive} {
		if rc.count(name) != 1 {
			t.Errorf("%s sent %d times", name, rc.count(name))
		}
	}
	open := newClient(t, "", nil)
	if ans, err := open.AllowPlay(context.Background(), play("anything")); err != nil || !ans.Allow {
		t.Fatalf("without hooks.url: %+v, %v", ans, err)
	}
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	caCert, caKey := makeCert(t, nil, nil, "test CA", true)
	serverCert, serverKey := makeCert(t, caCert, caKey, "127.0.0.1", false)
	clientCert, clientKey := makeCert(t, caCert, caKey, "node n1", false)
	write := func(name string, blocks ...*pem.Block) string {
		p := filepath.Join(dir, name)
		var b []byte
		for _, blk := range blocks {
			b = append(b, pem.EncodeToMemory(blk)...)
		}
		os.WriteFile(p, b, 0o600)
		return p
	}
	caFile := write("ca.pem", certBlock(caCert))
	certFile := write("node.pem", certBlock(clientCert))
	keyFile := write("node.key", keyBlock(t, clientKey))

	rc := &receiver{got: map[string][]map[string]any{}, answer: func(string, map[string]any) (int, any, time.Duration) {
		return 200, engineapi.HookAnswer{Allow: true}, 0
	}}
	srv := httptest.NewUnstartedServer(rc)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{serverCert.Raw}, PrivateKey: serverKey}}}
	srv.StartTLS()
	defer srv.Close()

	c := newClient(t, srv.URL, func(cfg *engineapi.Config) {
		cfg.Hooks.CAFile, cfg.Hooks.ClientCertFile, cfg.Hooks.ClientKeyFile = caFile, certFile, keyFile
	})
	if ans, err := c.AllowPlay(context.Background(), play("t")); err != nil || !ans.Allow {
		t.Fatalf("with the node certificate: %+v, %v", ans, err)
	}
	anon := newClient(t, srv.URL, func(cfg *engineapi.Config) { cfg.Hooks.CAFile = caFile })
	if ans, err := anon.AllowPlay(context.Background(), play("t")); err == nil || ans.Allow {
		t.Fatal("without a client certificate the call must fail, and fail closed")
	}
}

func makeCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, ca bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: ca, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if cn == "127.0.0.1" {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func certBlock(c *x509.Certificate) *pem.Block { return &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw} }

func keyBlock(t *testing.T, k *ecdsa.PrivateKey) *pem.Block {
	b, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
}
