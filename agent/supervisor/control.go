package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// ControlError is an error answer of the engine's control API, with the
// engine's code.
type ControlError struct {
	Status  int
	Code    string
	Message string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("engine control API answered %d %s: %s", e.Status, e.Code, e.Message)
}

// controlTarget is where the running engine's control API is; it is set
// while an engine runs, for calls from other goroutines than Run.
type controlTarget struct {
	addr, secret string
}

// controlClient has a longer timeout than health checks: a smoke test (up to
// 30 s) or a stream close may take a while.
var controlClient = &http.Client{Timeout: 45 * time.Second}

// Call sends one request to the running engine's loopback control API and
// decodes a 2xx JSON answer into out (when not nil).
func (s *Supervisor) Call(ctx context.Context, method, path string, in, out any) error {
	t := s.target.Load()
	if t == nil {
		return ErrNotRunning
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+t.addr+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t.secret)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := controlClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e engineapi.Error
		json.Unmarshal(raw, &e)
		return &ControlError{Status: resp.StatusCode, Code: e.Code, Message: e.Message}
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, out)
}
