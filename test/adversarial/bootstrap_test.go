package adversarial

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/testkit"
)

// startNginx runs Debian's nginx on a loopback port as a reverse proxy in
// front of upstream (host:port), with the given extra proxy directives,
// and returns its URL.
func startNginx(t *testing.T, upstream, directives string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("nginx is required for the reverse proxy peer (scripts/install-deps.sh test): %v", err)
		}
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	conf := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  server {
    listen %[2]s;
    location / {
      proxy_pass http://%[3]s;
      %[4]s
    }
  }
}
`, dir, addr, upstream, directives)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
	// If this test binary dies before its cleanups, nginx goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The workers inherit stdout and stderr: a pipe would keep Wait
	// waiting for them, so nginx writes to its error log only.
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting nginx: %v", err)
	}
	t.Cleanup(func() {
		// SIGTERM is nginx's fast shutdown: the master stops its workers.
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	testkit.Eventually(t, 10*time.Second, "nginx listening", func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr
}

// bootstrapCodeOf reads the one-time code the node printed in its log, as
// an operator without a shell on the host would read the log.
func bootstrapCodeOf(t *testing.T, n *node) string {
	t.Helper()
	var code string
	testkit.Eventually(t, 10*time.Second, "the bootstrap code in the log", func() bool {
		for _, line := range strings.Split(n.logs.String(), "\n") {
			var rec struct{ BootstrapCode string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.BootstrapCode != "" {
				code = rec.BootstrapCode
				return true
			}
		}
		return false
	})
	return code
}

// Item 6: nginx on the same host forwards a remote client's bootstrap to
// the node over loopback. The node refuses it when a forwarding header is
// present or the peer is a trusted proxy; the one-time code from the log
// is the way in for hosts without a shell.
func TestAttack06BootstrapBehindAReverseProxy(t *testing.T) {
	body := map[string]string{"username": "intruder", "password": "a chosen passphrase of mine"}
	t.Run("proxy that adds X-Forwarded-For", func(t *testing.T) {
		n := startNode(t, "a6a", "", "", nil)
		proxy := startNginx(t, n.s.HTTPAddr, "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;")
		refused(t, "bootstrap through nginx", send(t, proxy, request{method: "POST", path: "/api/v2/auth/bootstrap", body: body}), 403, "permission_denied")
		// A remote client forging headers straight at the node gets no
		// further either.
		refused(t, "bootstrap with a forged X-Real-IP", send(t, n.api, request{method: "POST", path: "/api/v2/auth/bootstrap", body: body,
			header: http.Header{"X-Real-Ip": {"127.0.0.1"}}}), 403, "permission_denied")
		var st struct{ BootstrapRequired bool }
		n.call("GET", "/api/v2/auth/bootstrap-status", "", nil).decode(t, &st)
		if !st.BootstrapRequired {
			t.Fatal("the intruder became the administrator")
		}
	})
	t.Run("trusted proxy that adds nothing", func(t *testing.T) {
		n := startNode(t, "a6b", "", "", func(c *config.Config) { c.TrustedProxies = []string{"127.0.0.1/32"} })
		proxy := startNginx(t, n.s.HTTPAddr, "")
		refused(t, "bootstrap through a trusted proxy", send(t, proxy, request{method: "POST", path: "/api/v2/auth/bootstrap", body: body}), 403, "permission_denied")
		refused(t, "a wrong bootstrap code", send(t, proxy, request{method: "POST", path: "/api/v2/auth/bootstrap", body: body,
			header: http.Header{"X-Svc-Bootstrap-Code": {"WRONGWRONGWRONGWRONGWRONGWRONGWR"}}}), 403, "permission_denied")
		// The operator reads the code from the log and bootstraps remotely.
		code := bootstrapCodeOf(t, n)
		a := send(t, proxy, request{method: "POST", path: "/api/v2/auth/bootstrap", body: map[string]string{"username": "root", "password": rootPassword},
			header: http.Header{"X-Svc-Bootstrap-Code": {code}}})
		if a.status != 200 {
			t.Fatalf("bootstrap with the code: %s", a)
		}
		refused(t, "the code used again", send(t, proxy, request{method: "POST", path: "/api/v2/auth/bootstrap", body: body,
			header: http.Header{"X-Svc-Bootstrap-Code": {code}}}), 409, "conflict")
	})
}
