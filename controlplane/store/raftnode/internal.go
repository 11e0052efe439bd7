package raftnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/svcplatform/svc/controlplane/store"
)

// Internal link endpoints (served only on authenticated forward streams).
// Error answers carry one of these codes so the caller can tell a safe retry
// from an unknown outcome.
const (
	codeNotLeader      = "not_leader"
	codeInvalid        = "invalid"
	codeUnknownOutcome = "unknown_outcome"
	codeStorageFull    = "storage_full"
	codeInternal       = "internal"
)

type linkError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type readIndexReply struct {
	Index uint64 `json:"index"`
}

func (n *Node) internalHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/propose", n.handlePropose)
	mux.HandleFunc("GET /v1/read-index", n.handleReadIndex)
	mux.HandleFunc("POST /v1/join", n.handleJoin)
	mux.HandleFunc("POST /v1/remove", n.handleRemove)
	mux.HandleFunc("GET /v1/status", n.handleStatus)
	return mux
}

func writeLinkJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeLinkError(w http.ResponseWriter, err error) {
	code, status := codeInternal, http.StatusInternalServerError
	switch {
	case notAppended(err), errors.Is(err, store.ErrNoLeader):
		code, status = codeNotLeader, http.StatusMisdirectedRequest
	case errors.Is(err, store.ErrInvalidRequest), errors.Is(err, ErrBadMember):
		code, status = codeInvalid, http.StatusBadRequest
	case errors.Is(err, store.ErrUnknownOutcome):
		code, status = codeUnknownOutcome, http.StatusServiceUnavailable
	case errors.Is(err, store.ErrStorageFull):
		code, status = codeStorageFull, http.StatusInsufficientStorage
	}
	writeLinkJSON(w, status, linkError{Code: code, Message: err.Error()})
}

func (n *Node) handlePropose(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeLinkError(w, err)
		return
	}
	if n.raft.State() != raft.Leader {
		writeLinkError(w, raft.ErrNotLeader)
		return
	}
	if err := n.storage.admitWrite(); err != nil {
		writeLinkError(w, err)
		return
	}
	p, retry, err := n.applyLocal(r.Context(), data)
	if err != nil {
		if retry {
			err = fmt.Errorf("%w: %w", raft.ErrNotLeader, err)
		}
		writeLinkError(w, err)
		return
	}
	writeLinkJSON(w, http.StatusOK, p)
}

func (n *Node) handleReadIndex(w http.ResponseWriter, r *http.Request) {
	if n.raft.State() != raft.Leader {
		writeLinkError(w, raft.ErrNotLeader)
		return
	}
	idx, err := n.localReadIndex(r.Context())
	if err != nil {
		if errors.Is(err, raft.ErrLeadershipLost) {
			err = raft.ErrNotLeader
		}
		writeLinkError(w, err)
		return
	}
	writeLinkJSON(w, http.StatusOK, readIndexReply{Index: idx})
}

func (n *Node) handleJoin(w http.ResponseWriter, r *http.Request) {
	var req JoinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeLinkError(w, fmt.Errorf("%w: %w", ErrBadMember, err))
		return
	}
	if err := n.joinLocal(req); err != nil {
		writeLinkError(w, err)
		return
	}
	writeLinkJSON(w, http.StatusOK, struct{}{})
}

func (n *Node) handleRemove(w http.ResponseWriter, r *http.Request) {
	var req struct {
		NodeID string `json:"nodeId"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeLinkError(w, fmt.Errorf("%w: %w", ErrBadMember, err))
		return
	}
	if err := n.removeLocal(req.NodeID); err != nil {
		writeLinkError(w, err)
		return
	}
	writeLinkJSON(w, http.StatusOK, struct{}{})
}

func (n *Node) handleStatus(w http.ResponseWriter, r *http.Request) {
	at, _ := strconv.ParseInt(r.URL.Query().Get("hashAt"), 10, 64)
	writeLinkJSON(w, http.StatusOK, n.LocalStatus(r.Context(), at))
}

// callLeader posts to the leader's internal endpoint. The boolean tells the
// caller whether a retry is safe: the leader said it is not the leader, or
// the request never left this node.
func (n *Node) callLeader(ctx context.Context, leaderAddr, method, path string, body []byte, out any) (bool, error) {
	if leaderAddr == "" {
		return true, store.ErrNoLeader
	}
	return n.callPeer(ctx, leaderAddr, method, path, body, out)
}

func (n *Node) callPeer(ctx context.Context, addr, method, path string, body []byte, out any) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	var sent atomic.Bool
	req = req.WithContext(withWroteRequest(ctx, &sent))
	resp, err := n.fwdClient.Do(req)
	if err != nil {
		if !sent.Load() {
			return true, fmt.Errorf("%w: %w", store.ErrNoLeader, err)
		}
		return false, fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return false, fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	}
	if resp.StatusCode != http.StatusOK {
		var le linkError
		json.Unmarshal(data, &le)
		switch le.Code {
		case codeNotLeader:
			return true, fmt.Errorf("%w: %s", raft.ErrNotLeader, le.Message)
		case codeInvalid:
			return false, fmt.Errorf("%w: %s", store.ErrInvalidRequest, le.Message)
		case codeUnknownOutcome:
			return false, fmt.Errorf("%w: %s", store.ErrUnknownOutcome, le.Message)
		case codeStorageFull:
			return false, fmt.Errorf("%w: the leader refused it: %s", store.ErrStorageFull, le.Message)
		}
		return false, fmt.Errorf("raftnode: peer %s answered %d: %s", addr, resp.StatusCode, le.Message)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return false, err
		}
	}
	return false, nil
}
