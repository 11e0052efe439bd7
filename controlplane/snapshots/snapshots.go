// Package snapshots keeps a recent JPEG of each channel that asks for one:
// while a channel's stream is Online, the leader grabs one keyframe through
// the engine's HTTP-fMP4 output with a single-use system ticket and decodes
// it with ffmpeg, at the channel's interval. HTTP-fMP4 carries every codec
// of the hub (HTTP-FLV has no VP8, which WebRTC publishers send). Images are read with the API
// credential or with a short-lived ticket bound to the channel and to the
// view or download action, so a browser can show one in an <img> without
// ever holding an API token.
package snapshots

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/store"
)

// Store layout.
const (
	SettingsPrefix = "/snapshots/settings/"
	ImagesPrefix   = "/snapshots/images/"
)

// Limits.
const (
	MinInterval      = 10
	MaxInterval      = 3600
	DefaultInterval  = 60
	MinTicketTTL     = 10
	MaxTicketTTL     = 600
	DefaultTicketTTL = 60
	// maxImage bounds a stored JPEG; ffmpeg scales larger frames down.
	maxImage = 512 << 10
)

// Actions a ticket is bound to.
const (
	ActionView     = "view"
	ActionDownload = "download"
)

// Errors mapped to contract codes at the boundary.
var (
	ErrInvalid   = fault.New(fault.Invalid, "invalid_body", "invalid snapshot request")
	ErrNotFound  = fault.New(fault.NotFound, "not_found", "no snapshot")
	ErrBadTicket = fault.New(fault.Unauthenticated, "authentication_required", "the snapshot ticket is invalid, expired, or for another channel or action")
)

// Settings are a channel's snapshot schedule.
type Settings struct {
	ChannelID       string    `json:"channelId"`
	Enabled         bool      `json:"enabled"`
	IntervalSeconds int       `json:"intervalSeconds"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// Image is a channel's latest snapshot.
type Image struct {
	ChannelID string    `json:"channelId"`
	TakenAt   time.Time `json:"takenAt"`
	Width     int       `json:"width"`
	Height    int       `json:"height"`
	JPEG      []byte    `json:"jpeg"`
}

// Service keeps settings and images.
type Service struct {
	Store    store.Store
	Channels *channels.Service
	Playback *playback.Service
	// MACKeys sign access tickets, primary first.
	MACKeys [][]byte
	// FFmpeg is the ffmpeg executable (default "ffmpeg").
	FFmpeg string
	Log    *zap.Logger
	Now    func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) channel(ctx context.Context, id string) error {
	_, err := s.Channels.Get(ctx, channels.ChannelID(id))
	return err
}

// Settings returns a channel's settings (disabled, default interval, when
// never set).
func (s *Service) Settings(ctx context.Context, channelID string) (Settings, error) {
	if err := s.channel(ctx, channelID); err != nil {
		return Settings{}, err
	}
	kv, _, err := store.Get(ctx, s.Store, SettingsPrefix+channelID, store.Local)
	if err != nil || kv == nil {
		return Settings{ChannelID: channelID, IntervalSeconds: DefaultInterval}, err
	}
	return store.Decode[Settings](kv)
}

// SaveSettings changes a channel's schedule; a nil field keeps its value.
func (s *Service) SaveSettings(ctx context.Context, channelID string, enabled *bool, interval *int) (Settings, error) {
	if interval != nil && (*interval < MinInterval || *interval > MaxInterval) {
		return Settings{}, fmt.Errorf("%w: intervalSeconds %d is outside %d-%d", ErrInvalid, *interval, MinInterval, MaxInterval)
	}
	st, err := s.Settings(ctx, channelID)
	if err != nil {
		return Settings{}, err
	}
	if enabled != nil {
		st.Enabled = *enabled
	}
	if interval != nil {
		st.IntervalSeconds = *interval
	}
	st.UpdatedAt = s.now()
	b, err := json.Marshal(st)
	if err != nil {
		return Settings{}, err
	}
	_, err = s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(SettingsPrefix+channelID, b)}})
	return st, err
}

// Latest returns a channel's latest image.
func (s *Service) Latest(ctx context.Context, channelID string) (*Image, error) {
	if err := s.channel(ctx, channelID); err != nil {
		return nil, err
	}
	kv, _, err := store.Get(ctx, s.Store, ImagesPrefix+channelID, store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: channel %s has no snapshot yet", ErrNotFound, channelID)
	}
	img, err := store.Decode[Image](kv)
	return &img, err
}

var b64 = base64.RawURLEncoding.Strict()

func mac(key []byte, channelID, action, exp string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("snapshot|" + channelID + "|" + action + "|" + exp))
	return m.Sum(nil)[:16]
}

// Ticket makes a ticket for one channel and action, good for ttl.
func (s *Service) Ticket(channelID, action string, ttl time.Duration) (string, time.Time, error) {
	if action != ActionView && action != ActionDownload {
		return "", time.Time{}, fmt.Errorf("%w: action %q is not view or download", ErrInvalid, action)
	}
	exp := s.now().Add(ttl).Truncate(time.Second)
	e := strconv.FormatInt(exp.Unix(), 10)
	return action + "." + e + "." + b64.EncodeToString(mac(s.MACKeys[0], channelID, action, e)), exp, nil
}

// CheckTicket verifies a ticket for a channel and returns its action.
func (s *Service) CheckTicket(channelID, tok string) (string, error) {
	parts := strings.Split(tok, ".")
	if len(tok) > 128 || len(parts) != 3 {
		return "", ErrBadTicket
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !s.now().Before(time.Unix(exp, 0)) {
		return "", ErrBadTicket
	}
	got, err := b64.DecodeString(parts[2])
	if err != nil {
		return "", ErrBadTicket
	}
	for _, k := range s.MACKeys {
		if hmac.Equal(got, mac(k, channelID, parts[0], parts[1])) {
			return parts[0], nil
		}
	}
	return "", ErrBadTicket
}

// Capture grabs one keyframe of a channel's Online stream now.
func (s *Service) Capture(ctx context.Context, channelID string) (*Image, error) {
	url, err := s.Playback.SystemLink(ctx, channelID, playback.ProtoFMP4, 20*time.Second)
	if err != nil {
		return nil, err
	}
	bin := s.FFmpeg
	if bin == "" {
		bin = "ffmpeg"
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// A live fMP4 stream starts at the keyframe of the hub's GOP cache, so
	// its first frame decodes.
	cmd := exec.CommandContext(cctx, bin, "-nostdin", "-v", "error", "-rw_timeout", "10000000", "-i", url,
		"-frames:v", "1", "-vf", "scale='min(1280,iw)':-2", "-q:v", "4", "-f", "image2", "-c:v", "mjpeg", "pipe:1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.Index(msg, "svc_ticket"); i >= 0 {
			msg = msg[:i] // never log a ticket
		}
		return nil, fmt.Errorf("ffmpeg: %w: %s", err, msg)
	}
	if out.Len() == 0 || out.Len() > maxImage {
		return nil, fmt.Errorf("ffmpeg made a %d-byte image", out.Len())
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(out.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("ffmpeg's image is not a JPEG: %w", err)
	}
	img := &Image{ChannelID: channelID, TakenAt: s.now(), Width: cfg.Width, Height: cfg.Height, JPEG: out.Bytes()}
	b, err := json.Marshal(img)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(ImagesPrefix+channelID, b)}}); err != nil {
		return nil, err
	}
	return img, nil
}

// Run takes the scheduled snapshots until ctx ends; it runs on the leader.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.due(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("snapshot round failed", zap.Error(err))
		}
	}
}

func (s *Service) due(ctx context.Context) error {
	resp, err := s.Store.Range(ctx, SettingsPrefix, store.RangeOptions{End: store.PrefixEnd(SettingsPrefix)})
	if err != nil {
		return err
	}
	now := s.now()
	for _, kv := range resp.KVs {
		st, err := store.Decode[Settings](kv)
		if err != nil || !st.Enabled {
			continue
		}
		img, err := s.Latest(ctx, st.ChannelID)
		if errors.Is(err, channels.ErrNotFound) {
			// The channel was deleted: its snapshots go with it.
			s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Delete(SettingsPrefix + st.ChannelID), store.Delete(ImagesPrefix + st.ChannelID)}})
			continue
		}
		if err == nil && now.Sub(img.TakenAt) < time.Duration(st.IntervalSeconds)*time.Second {
			continue
		}
		if loc, err := s.Playback.Streams.Locate(ctx, st.ChannelID); err != nil || !loc.Online {
			continue
		}
		if _, err := s.Capture(ctx, st.ChannelID); err != nil && ctx.Err() == nil {
			s.Log.Info("snapshot not taken", zap.String("channel", st.ChannelID), zap.Error(err))
		}
	}
	return nil
}
