package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"math/big"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
)

// Captcha is one challenge. Its answer is not stored: it is derived from
// the id with a keyed MAC, so the record only says that the challenge
// exists, until when, and for whom; consuming it is a compare-and-delete.
type Captcha struct {
	CaptchaID     string    `json:"captchaId"`
	CreatedAt     time.Time `json:"createdAt"`
	ExpiresAt     time.Time `json:"expiresAt"`
	ClientAddress string    `json:"clientAddress"`
}

// captchaAlphabet leaves out characters that look alike (0/O, 1/I, 2/Z,
// 5/S, 8/B, G/6).
const captchaAlphabet = "ACDEFHJKLMNPRTUVWXY34679"

const captchaLen = 6

func (s *Service) captchaAnswer(id string) string {
	sum := mac(s.MACKeys[0], "captcha", id)
	out := make([]byte, captchaLen)
	for i := range out {
		out[i] = captchaAlphabet[int(sum[i])%len(captchaAlphabet)]
	}
	return string(out)
}

// CaptchaAnswer is what captcha id's image shows: what a person types.
// Tests that play that person read it here instead of from the image.
func (s *Service) CaptchaAnswer(id string) string { return s.captchaAnswer(id) }

// CaptchaSolved reports whether answer solves captcha id, without a
// lookup (the answer is derived from the id); whether the captcha still
// exists, unused, is for the login that consumes it to find out.
func (s *Service) CaptchaSolved(id, answer string) bool { return s.captchaAnswerOK(id, answer) }

func (s *Service) captchaAnswerOK(id, answer string) bool {
	want := s.captchaAnswer(id)
	got := strings.ToUpper(strings.TrimSpace(answer))
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *Service) getCaptcha(ctx context.Context, id string) (*Captcha, int64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, 0, nil
	}
	kv, _, err := store.Get(ctx, s.Store, captchasPrefix+id, store.Local)
	if err != nil || kv == nil {
		return nil, 0, err
	}
	c, err := store.Decode[Captcha](kv)
	return &c, kv.ModRevision, err
}

func (s *Service) captchaOp(addr string, now time.Time) (string, store.Op, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", store.Op{}, err
	}
	c := Captcha{CaptchaID: id.String(), CreatedAt: now, ExpiresAt: now.Add(s.cfg().CaptchaTTL), ClientAddress: addr}
	b, err := json.Marshal(c)
	return c.CaptchaID, store.Put(captchasPrefix+c.CaptchaID, b), err
}

// NewCaptcha issues a challenge; with replace set (the refresh operation)
// the old challenge is removed in the same Txn, so it can no longer be
// answered.
func (s *Service) NewCaptcha(ctx context.Context, replace, addr string, _ audit.Actor) (string, error) {
	id, op, err := s.captchaOp(addr, s.now())
	if err != nil {
		return "", err
	}
	ops := []store.Op{op}
	if replace != "" {
		if _, err := uuid.Parse(replace); err == nil {
			ops = append(ops, store.Delete(captchasPrefix+replace))
		}
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		return "", err
	}
	return id, nil
}

// CaptchaPNG renders a live challenge; ErrNotFound when it does not exist
// or has expired.
func (s *Service) CaptchaPNG(ctx context.Context, id string) ([]byte, error) {
	c, _, err := s.getCaptcha(ctx, id)
	if err != nil {
		return nil, err
	}
	if c == nil || !s.now().Before(c.ExpiresAt) {
		return nil, ErrNotFound
	}
	return renderCaptcha(s.captchaAnswer(id))
}

func randn(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0
	}
	return int(v.Int64())
}

// renderCaptcha draws the text with jittered glyphs, scales it up and
// covers it with noise lines and dots.
func renderCaptcha(text string) ([]byte, error) {
	const cell, scale, h = 11, 4, 20
	small := image.NewRGBA(image.Rect(0, 0, cell*len(text)+6, h))
	for i := range small.Pix {
		small.Pix[i] = 0xff
	}
	d := font.Drawer{Dst: small, Face: basicfont.Face7x13}
	for i, ch := range text {
		d.Src = image.NewUniform(color.RGBA{uint8(randn(120)), uint8(randn(120)), uint8(randn(120)), 0xff})
		d.Dot = fixed.P(3+i*cell+randn(3), 14+randn(4)-2)
		d.DrawString(string(ch))
	}
	w := small.Bounds().Dx() * scale
	img := image.NewRGBA(image.Rect(0, 0, w, h*scale))
	for y := 0; y < h*scale; y++ {
		// A per-row horizontal wave distorts the glyphs.
		shift := (randn(3) - 1) + int(3*wave(y))
		for x := 0; x < w; x++ {
			sx := (x + shift) / scale
			if sx < 0 || sx >= small.Bounds().Dx() {
				img.Set(x, y, color.White)
				continue
			}
			img.Set(x, y, small.At(sx, y/scale))
		}
	}
	for n := 0; n < 6; n++ {
		c := color.RGBA{uint8(randn(200)), uint8(randn(200)), uint8(randn(200)), 0xff}
		x0, y0, x1, y1 := randn(w), randn(h*scale), randn(w), randn(h*scale)
		steps := max(abs(x1-x0), abs(y1-y0)) + 1
		for t := 0; t <= steps; t++ {
			img.Set(x0+(x1-x0)*t/steps, y0+(y1-y0)*t/steps, c)
		}
	}
	for n := 0; n < w*h*scale/25; n++ {
		img.Set(randn(w), randn(h*scale), color.Gray{uint8(randn(256))})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func wave(y int) float64 {
	// A cheap triangle wave with period 40 rows, in [-1, 1].
	p := y % 40
	if p < 20 {
		return float64(p)/10 - 1
	}
	return 3 - float64(p)/10
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// CaptchaTTL is how long a new challenge is accepted.
func (s *Service) CaptchaTTL() time.Duration { return s.cfg().CaptchaTTL }
