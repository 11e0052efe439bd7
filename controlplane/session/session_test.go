package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// clock is a time source the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

const password = "a long enough test password"

// newService runs a real single-node store with one active user "alice".
func newService(t *testing.T) (*Service, *clock) {
	t.Helper()
	node := storetest.SingleNode(t, account.Index, audit.Index)
	accounts := &account.Service{Store: node, Reader: node.State()}
	if _, err := accounts.Bootstrap(context.Background(), account.Actor{}, "alice", password, ""); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now().UTC()}
	return &Service{Store: node, Accounts: accounts, MACKeys: [][]byte{[]byte("k1-k1-k1-k1-k1-k1-k1-k1-k1-k1-k1")}, Now: clk.now}, clk
}

func login(s *Service, user, pw, captchaID, answer string) (*Issued, error) {
	return s.Login(context.Background(), LoginInput{Username: user, Password: pw, CaptchaID: captchaID, CaptchaAnswer: answer, ClientAddress: "192.0.2.7"})
}

func captchaOf(t *testing.T, err error, want error) string {
	t.Helper()
	var ce *CaptchaError
	if !errors.As(err, &ce) || !errors.Is(err, want) || ce.CaptchaID == "" {
		t.Fatalf("got %v, want %v with a captcha id", err, want)
	}
	return ce.CaptchaID
}

func TestCaptchaGatesLoginAfterFailures(t *testing.T) {
	s, clk := newService(t)
	for i := 0; i < 4; i++ {
		if _, err := login(s, "alice", "wrong", "", ""); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	_, err := login(s, "ALICE", "wrong", "", "")
	first := captchaOf(t, err, ErrBadCredentials)
	_, err = login(s, "alice", password, "", "")
	captchaOf(t, err, ErrCaptchaRequired)

	// A wrong answer consumes the challenge; the right answer to the used
	// one is refused afterwards, and the next one works.
	_, err = login(s, "alice", password, first, "AAAAAA")
	next := captchaOf(t, err, ErrCaptchaWrong)
	if _, err := login(s, "alice", password, first, s.captchaAnswer(first)); !errors.Is(err, ErrCaptchaWrong) {
		t.Fatalf("a consumed captcha was accepted: %v", err)
	}
	_ = next
	// An expired challenge is refused.
	id, err := s.NewCaptcha(context.Background(), "", "192.0.2.7", audit.Actor{})
	if err != nil {
		t.Fatal(err)
	}
	clk.add(6 * time.Minute)
	if _, err := login(s, "alice", password, id, s.captchaAnswer(id)); !errors.Is(err, ErrCaptchaWrong) {
		t.Fatalf("an expired captcha was accepted: %v", err)
	}
	clk.add(-6 * time.Minute)
	id, err = s.NewCaptcha(context.Background(), "", "192.0.2.7", audit.Actor{})
	if err != nil {
		t.Fatal(err)
	}
	// Letter case and surrounding space do not matter; the answer is right.
	is, err := login(s, "alice", password, id, " "+strings.ToLower(s.captchaAnswer(id))+" ")
	if err != nil {
		t.Fatalf("right password and captcha: %v", err)
	}
	if is.User.LastLoginAt == nil {
		t.Fatal("last login time not recorded")
	}
	// A replayed captcha cannot open a second session.
	if _, err := login(s, "alice", password, id, s.captchaAnswer(id)); !errors.Is(err, ErrCaptchaWrong) {
		t.Fatalf("captcha replay: %v", err)
	}
	// Once the window has passed without failures, no captcha is needed.
	clk.add(16 * time.Minute)
	if _, err := login(s, "alice", password, "", ""); err != nil {
		t.Fatalf("after the failure window: %v", err)
	}
	// Cleanup removes what no longer matters and keeps the live session.
	clk.add(13 * time.Hour)
	if n, err := s.Cleanup(context.Background()); err != nil || n == 0 {
		t.Fatalf("cleanup removed %d: %v", n, err)
	}
}

func TestAccessTokensVerifyAndExpire(t *testing.T) {
	s, clk := newService(t)
	is, err := login(s, "alice", password, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.ParseAccess(is.AccessToken, clk.now())
	if err != nil || c.SessionID != is.Session.SessionID {
		t.Fatalf("parse: %+v %v", c, err)
	}
	if _, err := s.Resolve(context.Background(), c, clk.now()); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	// Any change to the token breaks its MAC.
	for i := len(AccessPrefix); i < len(is.AccessToken); i += 7 {
		b := []byte(is.AccessToken)
		b[i] ^= 1
		if _, err := s.ParseAccess(string(b), clk.now()); err == nil {
			t.Fatalf("tampered token at %d accepted", i)
		}
	}
	// After a key rotation the old key still verifies; an unknown key not.
	rotated := &Service{MACKeys: [][]byte{[]byte("k2-k2-k2-k2-k2-k2-k2-k2-k2-k2-k2"), s.MACKeys[0]}}
	if _, err := rotated.ParseAccess(is.AccessToken, clk.now()); err != nil {
		t.Fatalf("token from before a key rotation: %v", err)
	}
	if !rotated.CheckCSRF(is.Session.SessionID, is.CSRFToken) || rotated.CheckCSRF("other", is.CSRFToken) {
		t.Fatal("CSRF token not bound to its session across a rotation")
	}
	other := &Service{MACKeys: [][]byte{[]byte("k3-k3-k3-k3-k3-k3-k3-k3-k3-k3-k3")}}
	if _, err := other.ParseAccess(is.AccessToken, clk.now()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("token under a foreign key: %v", err)
	}
	clk.add(11 * time.Minute)
	if _, err := s.ParseAccess(is.AccessToken, clk.now()); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("expired access token: %v", err)
	}
	// The refresh token still works and issues a new access token; the one
	// two generations old is no longer accepted.
	r1, err := s.Refresh(context.Background(), is.RefreshToken, audit.Actor{})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Refresh(context.Background(), r1.RefreshToken, audit.Actor{})
	if err != nil {
		t.Fatal(err)
	}
	old := s.accessToken(is.Session.SessionID, 0, clk.now().Add(time.Minute))
	oc, _ := s.ParseAccess(old, clk.now())
	if _, err := s.Resolve(context.Background(), oc, clk.now()); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("an access token two rotations old: %v", err)
	}
	nc, _ := s.ParseAccess(r2.AccessToken, clk.now())
	if _, err := s.Resolve(context.Background(), nc, clk.now()); err != nil {
		t.Fatalf("current access token: %v", err)
	}
	// The absolute lifetime ends everything.
	clk.add(12 * time.Hour)
	if _, err := s.Refresh(context.Background(), r2.RefreshToken, audit.Actor{}); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("refresh after the session's end: %v", err)
	}
}

func TestConcurrentRefreshWithOneTokenEndsTheFamily(t *testing.T) {
	s, _ := newService(t)
	is, err := login(s, "alice", password, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = s.Refresh(context.Background(), is.RefreshToken, audit.Actor{})
		}(i)
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if !errors.Is(err, ErrRefreshReused) && !errors.Is(err, ErrSessionEnded) {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if won > 1 {
		t.Fatalf("%d refreshes won with one token", won)
	}
	sess, _, _ := s.Get(context.Background(), is.Session.SessionID)
	if sess.RevokedAt == nil || sess.RevokedReason != "refresh_token_reuse" {
		t.Fatalf("the family survived a reuse: %+v", sess)
	}
}

func FuzzParseTokens(f *testing.F) {
	s := &Service{MACKeys: [][]byte{[]byte("fuzz-key-fuzz-key-fuzz-key-fuzz")}}
	now := time.Unix(1_800_000_000, 0)
	f.Add(s.accessToken("01a2055c-42d5-7b9f-9bff-f65073844549", 3, now.Add(time.Minute)))
	f.Add("svc_srt_01a2055c-42d5-7b9f-9bff-f65073844549.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("svc_sat_...")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		if c, err := s.ParseAccess(tok, now); err == nil && s.accessToken(c.SessionID, c.Generation, c.ExpiresAt) != tok {
			t.Fatalf("accepted a token it would not have issued: %q", tok)
		}
		if id, err := parseRefresh(tok); err == nil && (id == "" || !strings.HasPrefix(tok, RefreshPrefix+id+".")) {
			t.Fatalf("refresh token parsed to %q from %q", id, tok)
		}
		s.CheckCSRF("x", tok)
	})
}
