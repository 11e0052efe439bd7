package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/svcplatform/svc/shared/agentapi"
)

// RemoteError is an error answer of the agent port.
type RemoteError struct {
	Status        int
	Code, Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("control plane answered %d %s: %s", e.Status, e.Code, e.Message)
}

func remoteError(status int, body []byte) *RemoteError {
	var e agentapi.Error
	if json.Unmarshal(body, &e) != nil || e.Code == "" {
		return &RemoteError{Status: status, Code: fmt.Sprintf("http_%d", status), Message: string(bytes.TrimSpace(body))}
	}
	return &RemoteError{Status: status, Code: e.Code, Message: e.Message}
}

// ErrRetired ends the agent: the control plane retired this node and
// refuses its certificate for good.
var ErrRetired = errors.New("this node was retired by the control plane")

// client talks to the control plane's agent port over mTLS, failing over
// between the control nodes it knows.
type client struct {
	id   *identity
	http *http.Client

	mu  sync.Mutex
	cur int
}

func newClient(id *identity) *client {
	tr := &http.Transport{TLSClientConfig: id.tlsConfig(), MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 0}
	return &client{id: id, http: &http.Client{Transport: tr}}
}

// post sends v to path on the current control node and decodes the answer
// into out. A connection failure moves to the next control node for the
// next call; an error answer is returned as *RemoteError.
func (c *client) post(ctx context.Context, path string, v, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	servers := c.id.servers()
	if len(servers) == 0 {
		return errors.New("no control node known")
	}
	c.mu.Lock()
	base := servers[c.cur%len(servers)]
	c.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			c.mu.Lock()
			c.cur++
			c.mu.Unlock()
		}
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, agentapi.MaxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		re := remoteError(resp.StatusCode, data)
		if re.Code == agentapi.CodeNodeRetired || re.Code == agentapi.CodeCertSuperseded {
			return fmt.Errorf("%w: %w", ErrRetired, re)
		}
		return re
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// isConflict reports an answer that says the command is no longer ours.
func isConflict(err error) bool {
	var re *RemoteError
	return errors.As(err, &re) && (re.Status == http.StatusConflict || re.Status == http.StatusNotFound)
}
