package rooms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// EngineMedia relays room signalling to the engines' WHIP/WHEP endpoints
// on their media ports, the ones players use: the engine admits the offer
// through its on_publish/on_play hook with the room ticket in svc_ticket.
type EngineMedia struct {
	// BaseURL is a media server's HTTP media base URL (scheme://host:port).
	BaseURL func(ctx context.Context, mediaServerID string) (string, error)
	// Pick chooses a media server for a room that names none.
	Pick   func(ctx context.Context) (string, error)
	Client *http.Client
}

// maxAnswer bounds an engine's SDP answer.
const maxAnswer = 64 << 10

func (m EngineMedia) client() *http.Client {
	if m.Client != nil {
		return m.Client
	}
	return &http.Client{Timeout: 15 * time.Second}
}

func (m EngineMedia) url(ctx context.Context, mediaServerID, suffix string) (string, error) {
	base, err := m.BaseURL(ctx, mediaServerID)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrMediaUnavailable, err)
	}
	return base + "/" + App + "/" + suffix, nil
}

// Offer implements Media.
func (m EngineMedia) Offer(ctx context.Context, mediaServerID, kind, stream, ticket string, sdp []byte) ([]byte, string, []string, error) {
	u, err := m.url(ctx, mediaServerID, stream+"/"+kind)
	if err != nil {
		return nil, "", nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"?svc_ticket="+url.QueryEscape(ticket), bytes.NewReader(sdp))
	if err != nil {
		return nil, "", nil, err
	}
	req.Header.Set("Content-Type", "application/sdp")
	resp, err := m.client().Do(req)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%w: %w", ErrMediaUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, "", nil, fmt.Errorf("%w: %w", ErrMediaUnavailable, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, "", nil, engineRefusal(resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || len(body) > maxAnswer || loc.Path == "" {
		return nil, "", nil, fmt.Errorf("%w: the media server's answer has no session", ErrMediaUnavailable)
	}
	return body, path.Base(loc.Path), resp.Header.Values("X-Svc-Note"), nil
}

// engineRefusal turns an engine's error answer into the domain's error:
// the offer's own faults are the caller's, anything else the media
// server's.
func engineRefusal(status int, body []byte) error {
	var e struct{ Code, Message string }
	_ = json.Unmarshal(body, &e)
	msg := strings.TrimSpace(e.Message)
	if len(msg) > 200 {
		msg = msg[:200]
	}
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusRequestEntityTooLarge, http.StatusNotAcceptable:
		return fmt.Errorf("%w: %s", ErrSDPRefused, msg)
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrPublicationNotActive, msg)
	}
	return fmt.Errorf("%w: the media server answered %d %s %s", ErrMediaUnavailable, status, e.Code, msg)
}

// Trickle implements Media.
func (m EngineMedia) Trickle(ctx context.Context, mediaServerID, kind, stream, session string, frag []byte) error {
	u, err := m.url(ctx, mediaServerID, stream+"/"+kind+"/"+url.PathEscape(session))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u, bytes.NewReader(frag))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/trickle-ice-sdpfrag")
	return m.do(req)
}

// Release implements Media.
func (m EngineMedia) Release(ctx context.Context, mediaServerID, kind, stream, session string) error {
	u, err := m.url(ctx, mediaServerID, stream+"/"+kind+"/"+url.PathEscape(session))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return err
	}
	err = m.do(req)
	if errors.Is(err, ErrNotFound) {
		return nil // the session already ended on the engine
	}
	return err
}

func (m EngineMedia) do(req *http.Request) error {
	resp, err := m.client().Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMediaUnavailable, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: the media server answered 404", ErrNotFound)
	}
	return engineRefusal(resp.StatusCode, body)
}

// PlayURL implements Media.
func (m EngineMedia) PlayURL(ctx context.Context, mediaServerID, stream string) (string, error) {
	return m.url(ctx, mediaServerID, stream+".live.flv")
}

// PickMediaServer implements Media.
func (m EngineMedia) PickMediaServer(ctx context.Context) (string, error) {
	return m.Pick(ctx)
}
