package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/ratelimit"
	"github.com/svcplatform/svc/controlplane/session"
)

// sessionEndpoints serves console login, refresh, logout, the user's own
// password change and the login captcha.
type sessionEndpoints struct {
	sessions *session.Service
	accounts *account.Service
	proxies  *ProxyTrust
	// byAddress and byUser rate-limit logins (by client, see
	// ratelimit.ClientKey, and by user name); captchas limit captcha
	// images and new captchas per client.
	byAddress, byUser, captchas *ratelimit.Limiter
}

func ginContext(ctx context.Context) *gin.Context {
	c, _ := ctx.(*gin.Context)
	return c
}

func (e *sessionEndpoints) limit(l *ratelimit.Limiter, key string) error {
	if ok, wait := l.Allow(key); !ok {
		return rateLimited(wait)
	}
	return nil
}

// limitUser applies the per-user-name login limit. It holds for every
// client, so whoever hammers a name would lock its owner out; a login that
// carries a solved captcha therefore still passes (and the login then
// consumes the captcha), and a refused one gets a captcha to solve. It
// reports whether the login must present its captcha.
func (e *sessionEndpoints) limitUser(c *gin.Context, username, captchaID, answer string) (bool, error) {
	client := ratelimit.ClientKey(c.ClientIP())
	ok, wait := e.byUser.AllowFor(strings.ToLower(username), client)
	if ok {
		return false, nil
	}
	if captchaID != "" && e.sessions.CaptchaSolved(captchaID, answer) {
		return true, nil
	}
	limited := rateLimited(wait)
	if ok, _ := e.captchas.Allow(client); !ok {
		return false, limited
	}
	id, err := e.sessions.NewCaptcha(requestContext(c), "", c.ClientIP(), audit.Actor{Type: "anonymous", ClientAddress: c.ClientIP(), TraceID: traceID(c)})
	if err != nil {
		return false, err
	}
	limited.Message = "too many logins for this user name; solve the captcha and send captchaId and captchaAnswer, or wait"
	limited.Details["captchaId"], limited.Details["captchaRequired"] = id, "true"
	return false, limited
}

// setCookies hands the tokens to the browser: HttpOnly, SameSite=Strict,
// and with TLS Secure plus the __Host-/__Secure- prefixes. The refresh
// cookie is sent only to /api/v2/auth.
func (e *sessionEndpoints) setCookies(c *gin.Context, is *session.Issued) {
	secure := e.proxies.Secure(c.Request)
	sessionName, refreshName := cookieNames(secure)
	now := time.Now()
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionName, Value: is.AccessToken, Path: "/", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteStrictMode, MaxAge: max(1, int(is.AccessExpiresAt.Sub(now).Seconds()))})
	http.SetCookie(c.Writer, &http.Cookie{Name: refreshName, Value: is.RefreshToken, Path: "/api/v2/auth", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteStrictMode, MaxAge: max(1, int(is.Session.ExpiresAt.Sub(now).Seconds()))})
	c.Header("Cache-Control", "no-store")
}

func (e *sessionEndpoints) clearCookies(c *gin.Context) {
	secure := e.proxies.Secure(c.Request)
	sessionName, refreshName := cookieNames(secure)
	http.SetCookie(c.Writer, &http.Cookie{Name: sessionName, Value: "", Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.SetCookie(c.Writer, &http.Cookie{Name: refreshName, Value: "", Path: "/api/v2/auth", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

func (e *sessionEndpoints) consoleSession(ctx context.Context, is *session.Issued) (contract.ConsoleSession, error) {
	perms, err := e.accounts.Permissions(ctx, is.User.RoleIDs)
	if err != nil {
		return contract.ConsoleSession{}, err
	}
	if perms == nil {
		perms = []string{}
	}
	return contract.ConsoleSession{SessionId: is.Session.SessionID, User: toUser(is.User), Permissions: perms, CsrfToken: is.CSRFToken,
		AccessExpiresAt: is.AccessExpiresAt, SessionExpiresAt: is.Session.ExpiresAt}, nil
}

func (e *sessionEndpoints) Login(ctx context.Context, r contract.LoginRequestObject) (contract.LoginResponseObject, error) {
	c := ginContext(ctx)
	if err := e.proxies.SameOrigin(c.Request); err != nil {
		return nil, err
	}
	if err := e.limit(e.byAddress, ratelimit.ClientKey(c.ClientIP())); err != nil {
		return nil, err
	}
	captchaID, answer := deref(r.Body.CaptchaId, ""), deref(r.Body.CaptchaAnswer, "")
	needCaptcha, err := e.limitUser(c, r.Body.Username, captchaID, answer)
	if err != nil {
		return nil, err
	}
	in := session.LoginInput{Username: r.Body.Username, Password: r.Body.Password, CaptchaID: captchaID, CaptchaAnswer: answer,
		RequireCaptcha: needCaptcha, ClientAddress: c.ClientIP(), UserAgent: c.Request.UserAgent(), TraceID: traceID(c)}
	is, err := e.sessions.Login(requestContext(ctx), in)
	if err != nil {
		return nil, err
	}
	body, err := e.consoleSession(requestContext(ctx), is)
	if err != nil {
		return nil, err
	}
	e.setCookies(c, is)
	return contract.Login200JSONResponse{Body: body}, nil
}

func (e *sessionEndpoints) RefreshSession(ctx context.Context, _ contract.RefreshSessionRequestObject) (contract.RefreshSessionResponseObject, error) {
	c := ginContext(ctx)
	if err := e.limit(e.byAddress, ratelimit.ClientKey(c.ClientIP())); err != nil {
		return nil, err
	}
	_, refreshName := cookieNames(e.proxies.Secure(c.Request))
	tok := cookieValue(c.Request, refreshName)
	if tok == "" {
		return nil, session.ErrSessionEnded
	}
	id, err := session.RefreshSessionID(tok)
	if err != nil {
		return nil, err
	}
	// Refresh is a cookie-authenticated state change like any other.
	if err := e.proxies.SameOrigin(c.Request); err != nil {
		return nil, err
	}
	if h := c.GetHeader(CSRFHeader); h == "" || !e.sessions.CheckCSRF(id, h) {
		return nil, csrfRejected("refreshing a console session needs its " + CSRFHeader + " header")
	}
	is, err := e.sessions.Refresh(requestContext(ctx), tok, audit.Actor{Type: string(identity.KindSession), ID: id, ClientAddress: c.ClientIP(), TraceID: traceID(c)})
	if err != nil {
		if errors.Is(err, session.ErrRefreshReused) || errors.Is(err, session.ErrSessionEnded) {
			e.clearCookies(c)
		}
		return nil, err
	}
	body, err := e.consoleSession(requestContext(ctx), is)
	if err != nil {
		return nil, err
	}
	e.setCookies(c, is)
	return contract.RefreshSession200JSONResponse{Body: body}, nil
}

func (e *sessionEndpoints) Logout(ctx context.Context, _ contract.LogoutRequestObject) (contract.LogoutResponseObject, error) {
	c := ginContext(ctx)
	id := identity.From(requestContext(ctx))
	if id.Kind != identity.KindSession {
		return nil, &Error{
			Status:    http.StatusConflict,
			Code:      "conflict",
			Message:   "an API token has no console session to end; revoke the token instead",
			Retryable: retryable(false),
		}
	}
	err := e.sessions.Logout(requestContext(ctx), id.CredentialID, audit.Actor{Type: string(id.Kind), ID: id.CredentialID, ClientAddress: c.ClientIP(), TraceID: traceID(c)})
	if err != nil && !errors.Is(err, session.ErrSessionEnded) {
		return nil, err
	}
	e.clearCookies(c)
	return contract.Logout200JSONResponse(done(contract.ActionResultActionLoggedOut, id.CredentialID, "the session was revoked and its cookies were cleared")), nil
}

func (e *sessionEndpoints) ChangeOwnPassword(ctx context.Context, r contract.ChangeOwnPasswordRequestObject) (contract.ChangeOwnPasswordResponseObject, error) {
	c := ginContext(ctx)
	rctx := requestContext(ctx)
	id := identity.From(rctx)
	if id.Subject == "" {
		return nil, &Error{Status: http.StatusConflict, Code: "conflict", Message: "this credential belongs to no console user", Retryable: retryable(false)}
	}
	if err := e.limit(e.byUser, "password-change:"+id.Subject); err != nil {
		return nil, err
	}
	u, _, err := e.accounts.User(rctx, id.Subject)
	if err != nil {
		return nil, err
	}
	wait, err := e.sessions.CheckCurrentPassword(rctx, session.PasswordCheck{User: u, Current: deref(r.Body.CurrentPassword, ""),
		ClientAddress: c.ClientIP(), TraceID: traceID(c)})
	switch {
	case errors.Is(err, session.ErrTooManyFailures):
		return nil, rateLimited(wait)
	case errors.Is(err, session.ErrBadCredentials):
		return nil, &Error{Status: http.StatusForbidden, Code: "invalid_credentials", Message: "currentPassword is missing or wrong", Retryable: retryable(false)}
	case err != nil:
		return nil, err
	}
	if err := e.accounts.SetPassword(rctx, accountActor(ctx), u.UserID, r.Body.NewPassword); err != nil {
		return nil, err
	}
	e.clearCookies(c)
	return contract.ChangeOwnPassword200JSONResponse(
		done(contract.ActionResultActionPasswordChanged, u.UserID, "the password was changed and every session of the user was revoked"),
	), nil
}

func (e *sessionEndpoints) GetCaptcha(ctx context.Context, r contract.GetCaptchaRequestObject) (contract.GetCaptchaResponseObject, error) {
	c := ginContext(ctx)
	if err := e.limit(e.captchas, ratelimit.ClientKey(c.ClientIP())); err != nil {
		return nil, err
	}
	img, err := e.sessions.CaptchaPNG(requestContext(ctx), r.Id.String())
	if err != nil {
		return nil, err
	}
	c.Header("Cache-Control", "no-store")
	return contract.GetCaptcha200ImagepngResponse{Body: bytes.NewReader(img), ContentLength: int64(len(img))}, nil
}

func (e *sessionEndpoints) RefreshCaptcha(ctx context.Context, r contract.RefreshCaptchaRequestObject) (contract.RefreshCaptchaResponseObject, error) {
	c := ginContext(ctx)
	if err := e.proxies.SameOrigin(c.Request); err != nil {
		return nil, err
	}
	if err := e.limit(e.captchas, ratelimit.ClientKey(c.ClientIP())); err != nil {
		return nil, err
	}
	id, err := e.sessions.NewCaptcha(requestContext(ctx), r.Id, c.ClientIP(), audit.Actor{Type: "anonymous", ClientAddress: c.ClientIP(), TraceID: traceID(c)})
	if err != nil {
		return nil, err
	}
	return contract.RefreshCaptcha200JSONResponse{CaptchaId: id, ImageUrl: "/api/v2/auth/captcha/" + id, ExpiresAt: time.Now().UTC().Add(e.sessions.CaptchaTTL())}, nil
}
