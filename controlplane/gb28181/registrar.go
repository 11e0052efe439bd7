package gb28181

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/svcplatform/svc/shared/digestauth"
	"go.uber.org/zap"
)

// Registration lifetimes a device may ask for.
const (
	defaultExpires = 3600
	maxExpires     = 86400
	minExpires     = 60
)

// dateLayout is the Date of a 200 to REGISTER in GB/T 28181's form
// (devices set their clock from it).
const dateLayout = "2006-01-02T15:04:05.000"

// onRegister is the registrar: 401 with a challenge, 403 for a wrong
// answer (auth_failed), 200 with Date for a right one.
func (s *Service) onRegister(req *sip.Request, tx sip.ServerTransaction) {
	from := req.From()
	if from == nil || !ValidCode(from.Address.User) {
		s.respond(tx, req, 400, "Bad Request: the From user is not a 20-digit GB28181 code", nil)
		return
	}
	id := DeviceID(from.Address.User)
	now := s.now()
	if !s.allowRegister(id, now) {
		s.respond(tx, req, 503, "Service Unavailable: REGISTER storm", nil, sip.NewHeader("Retry-After", "5"))
		return
	}
	auth := req.GetHeader("Authorization")
	if auth == nil {
		s.challenge(tx, req, false)
		return
	}
	cred, err := digestauth.Parse(auth.Value())
	if err != nil {
		s.authFailure(tx, req, id, err.Error(), now)
		return
	}
	if cred.Username != string(id) || cred.Realm != s.cfg.Domain {
		s.authFailure(tx, req, id, fmt.Sprintf("digest username %q or realm %q does not match device %s and realm %s", cred.Username, cred.Realm, id, s.cfg.Domain), now)
		return
	}
	nc, _ := strconv.ParseUint(cred.NC, 16, 64)
	switch s.nonces.use(cred.Nonce, nc, now) {
	case nonceStale:
		s.challenge(tx, req, true)
		return
	case nonceReplayed:
		s.authFailure(tx, req, id, "replayed digest nonce", now)
		return
	}
	if cred.Check(string(sip.REGISTER), s.cfg.Password) != nil {
		s.authFailure(tx, req, id, "digest response does not match the password", now)
		return
	}
	expires := registrationExpires(req)
	if expires == 0 {
		if err := s.unregister(id, now); err != nil {
			s.log.Warn("GB28181 unregister failed", zap.String("deviceId", string(id)), zap.Error(err))
			s.respond(tx, req, 500, "Server Internal Error", nil)
			return
		}
		s.respond(tx, req, 200, "OK", nil, sip.NewHeader("Date", now.Format(dateLayout)), sip.NewHeader("Expires", "0"))
		return
	}
	transport := strings.ToLower(req.Transport())
	cameOnline, err := s.register(id, transport, req.Source(), expires, now)
	if err != nil {
		s.log.Warn("GB28181 registration failed", zap.String("deviceId", string(id)), zap.Error(err))
		s.respond(tx, req, 500, "Server Internal Error", nil)
		return
	}
	hdrs := []sip.Header{sip.NewHeader("Date", now.Format(dateLayout)), sip.NewHeader("Expires", strconv.Itoa(expires))}
	if c := req.Contact(); c != nil {
		hdrs = append(hdrs, c)
	}
	s.respond(tx, req, 200, "OK", nil, hdrs...)
	if cameOnline && s.cfg.CatalogOnRegister {
		s.queryCatalog(id)
	}
}

// challenge answers 401 with a fresh nonce.
func (s *Service) challenge(tx sip.ServerTransaction, req *sip.Request, stale bool) {
	v := fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=MD5`, s.cfg.Domain, s.nonces.issue(s.now()))
	if stale {
		v += ", stale=true"
	}
	s.respond(tx, req, 401, "Unauthorized", nil, sip.NewHeader("WWW-Authenticate", v))
}

// authFailure answers 403 and emits auth_failed (at most once a minute per
// device: a device retrying a wrong password every few seconds must not
// flood every webhook receiver).
func (s *Service) authFailure(tx sip.ServerTransaction, req *sip.Request, id DeviceID, reason string, now time.Time) {
	s.respond(tx, req, 403, "Forbidden", nil)
	s.mu.Lock()
	last, seen := s.authFailed[id]
	emit := !seen || now.Sub(last) >= authFailedEvery
	if emit {
		s.authFailed[id] = now
	}
	s.mu.Unlock()
	s.log.Info("GB28181 authentication failed", zap.String("deviceId", string(id)), zap.String("source", req.Source()),
		zap.String("reason", reason), zap.Bool("event", emit))
	if emit {
		if err := s.recordAuthFailed(id, reason, now); err != nil {
			s.log.Warn("GB28181 auth_failed event not written", zap.String("deviceId", string(id)), zap.Error(err))
		}
	}
}

// allowRegister counts a device's REGISTERs per second.
func (s *Service) allowRegister(id DeviceID, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.live[id]
	if p == nil {
		p = &presence{status: StatusUnregistered}
		s.live[id] = p
	}
	if now.Sub(p.rateStart) >= time.Second {
		p.rateStart, p.rateCount = now, 0
	}
	p.rateCount++
	return p.rateCount <= s.cfg.MaxRegisterPerSecond
}

// registrationExpires is the lifetime asked for: the Contact's expires
// parameter, else the Expires header, else an hour; bounded.
func registrationExpires(req *sip.Request) int {
	v := ""
	if c := req.Contact(); c != nil {
		v, _ = c.Params.Get("expires")
	}
	if v == "" {
		if h := req.GetHeader("Expires"); h != nil {
			v = h.Value()
		}
	}
	if v == "" {
		return defaultExpires
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return defaultExpires
	}
	if n == 0 {
		return 0
	}
	return min(max(n, minExpires), maxExpires)
}
