package httpapi

import (
	"crypto/subtle"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/controlplane/ratelimit"
)

// BootstrapCodeHeader carries the one-time bootstrap code a control node
// prints in its log while no administrator exists; it stands in for a
// loopback connection on local-only operations, for hosts without a shell.
const BootstrapCodeHeader = "X-Svc-Bootstrap-Code"

// forwardingHeaders are set by reverse proxies (and by nobody else):
// a request carrying one came from somewhere else, whatever its socket.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
	"X-Forwarded-Server", "X-Real-Ip", "X-Client-Ip", "True-Client-Ip", "Cf-Connecting-Ip", "X-Original-Forwarded-For", "Via"}

// LocalAccess decides the local-only operations (x-svc-local-only): the
// first administrator's bootstrap. A request is local when its socket's
// peer is a loopback address, that peer is not a trusted reverse proxy
// (nginx on the same host connects from loopback too), and no forwarding
// header is present. A valid bootstrap code stands in for all of that.
type LocalAccess struct {
	Proxies *ProxyTrust
	// Code is the node's bootstrap code; empty accepts none.
	Code string
	// wrong limits bad codes per client.
	wrong *ratelimit.Limiter
}

// NewLocalAccess builds the check with a code (empty for none).
func NewLocalAccess(proxies *ProxyTrust, code string) *LocalAccess {
	return &LocalAccess{Proxies: proxies, Code: code, wrong: ratelimit.New(10, 5)}
}

func (l *LocalAccess) check(c *gin.Context) *Error {
	client := ratelimit.ClientKey(c.ClientIP())
	if code := c.GetHeader(BootstrapCodeHeader); code != "" {
		if ok, wait := l.wrong.Allow(client); !ok {
			return rateLimited(wait)
		}
		if l.Code != "" && subtle.ConstantTimeCompare([]byte(code), []byte(l.Code)) == 1 {
			return nil
		}
		return &Error{
			Status:    http.StatusForbidden,
			Code:      "permission_denied",
			Message:   "the bootstrap code is wrong; it is printed in this node's log while no administrator exists",
			Retryable: retryable(false),
		}
	}
	if local(c.Request, l.Proxies) {
		return nil
	}
	return &Error{Status: http.StatusForbidden, Code: "permission_denied", Retryable: retryable(false),
		Message: "this operation is accepted only from the server itself over loopback, not through a proxy; or send the bootstrap code from this node's log in " + BootstrapCodeHeader}
}

// local reports whether r came straight from this host.
func local(r *http.Request, proxies *ProxyTrust) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() || proxies.trusted(r) {
		return false
	}
	for _, h := range forwardingHeaders {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			return false
		}
	}
	return true
}
