package agentport

import (
	"crypto/x509"
	"math"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/ratelimit"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/pki"
)

func nodeIDOf(cert *x509.Certificate) (string, error) { return pki.AgentNodeID(cert) }

// handleCA serves the CA certificate to an enrolling agent, which trusts
// it only if it matches the operator's pin.
func (s *Server) handleCA(w http.ResponseWriter, r *http.Request) {
	ca, err := s.d.Authority.CA(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(ca.CertPEM)
}

// Enrollment attempts one client address may make: an agent enrolls once,
// and an operator retrying a typo needs a handful.
const (
	enrollPerMinute = 10
	enrollBurst     = 5
)

func (s *Server) handleEnroll(w http.ResponseWriter, r *http.Request) {
	if ok, wait := s.enrollments.Allow(ratelimit.ClientKey(clientIP(r))); !ok {
		s.refusals.note(clientIP(r), errRateLimited)
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		writeError(w, http.StatusTooManyRequests, agentapi.CodeRateLimited, "too many enrollment attempts from this address; try again later")
		return
	}
	var req agentapi.EnrollRequest
	if err := readJSON(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if len(req.Code) > 128 || len(req.Hostname) > 253 || len(req.AgentVersion) > 128 {
		writeError(w, http.StatusBadRequest, agentapi.CodeInvalid, "code, hostname or agentVersion is too long")
		return
	}
	ca, err := s.d.Authority.CA(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	rec, certPEM, err := s.d.Nodes.Enroll(r.Context(), ca, nodes.EnrollRequest{Code: req.Code, CSR: req.CSR, Hostname: req.Hostname,
		AgentVersion: req.AgentVersion, ClientAddress: clientIP(r)})
	if err != nil {
		s.refusals.note(clientIP(r), err)
		s.fail(w, err)
		return
	}
	s.d.Log.Info("node agent enrolled", zap.String("agentNode", rec.NodeID), zap.String("hostname", req.Hostname), zap.String("serial", rec.CertSerial))
	writeJSON(w, http.StatusOK, agentapi.EnrollResponse{NodeID: rec.NodeID, Certificate: string(certPEM), CA: string(ca.CertPEM),
		ServerURLs: s.d.ServerURLs(r.Context())})
}

func (s *Server) handleRenew(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	var req agentapi.RenewRequest
	if err := readJSON(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	ca, err := s.d.Authority.CA(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	certPEM, err := s.d.Nodes.Renew(r.Context(), ca, rec.NodeID, req.CSR)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.d.Log.Info("node certificate renewed", zap.String("agentNode", rec.NodeID))
	writeJSON(w, http.StatusOK, agentapi.RenewResponse{Certificate: string(certPEM), ServerURLs: s.d.ServerURLs(r.Context())})
}

// hookName checks the {hookName} path segment.
func hookName(r *http.Request) (string, bool) {
	n := r.PathValue("hookName")
	if n == "" || len(n) > 64 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
		return "", false
	}
	return n, true
}
