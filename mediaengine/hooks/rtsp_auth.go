package hooks

import (
	"context"
	"sync"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// rtspPasswordTTL is how long a password stays in memory after the control
// plane gave it: a Digest exchange is two requests, and a player's
// reconnects should not each cost a hook, but a changed or deleted
// credential must take effect soon.
const rtspPasswordTTL = 30 * time.Second

type passwordEntry struct {
	password string
	ok       bool
	expires  time.Time
}

// passwordCache remembers on_rtsp_auth answers, refusals included (for a
// shorter time, so a guessing client cannot turn into a hook flood).
type passwordCache struct {
	mu sync.Mutex
	m  map[string]passwordEntry
}

// RTSPPassword asks the control plane for an RTSP user's password
// (on_rtsp_auth); ok is false for an unknown user. With hooks disabled
// there are no credentials at all.
func (c *Client) RTSPPassword(ctx context.Context, user, realm, remoteAddr string) (password string, ok bool, err error) {
	if !c.Enabled() {
		return "", false, nil
	}
	now := time.Now()
	c.passwords.mu.Lock()
	if e, hit := c.passwords.m[user]; hit && now.Before(e.expires) {
		c.passwords.mu.Unlock()
		return e.password, e.ok, nil
	}
	c.passwords.mu.Unlock()
	ans, err := c.post(ctx, engineapi.HookOnRTSPAuth, engineapi.RTSPAuthHook{HookHeader: c.stamp(), User: user, Realm: realm, RemoteAddr: remoteAddr})
	if err != nil {
		return "", false, err
	}
	ttl := rtspPasswordTTL
	if !ans.Allow {
		ttl = rtspPasswordTTL / 6
	}
	c.passwords.mu.Lock()
	if c.passwords.m == nil || len(c.passwords.m) > 10000 {
		c.passwords.m = map[string]passwordEntry{}
	}
	c.passwords.m[user] = passwordEntry{password: ans.Password, ok: ans.Allow, expires: now.Add(ttl)}
	c.passwords.mu.Unlock()
	return ans.Password, ans.Allow, nil
}
