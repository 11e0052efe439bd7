package nodecommand

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Defaults of a command's delivery.
const (
	DefaultVisibility  = 30 * time.Second
	DefaultTimeout     = 10 * time.Minute
	DefaultMaxAttempts = 3
	MaxTimeout         = 24 * time.Hour
)

// Service is the command queue on one control node.
type Service struct {
	Store  store.Store
	Reader query.Reader
	// LocalNodeID is the control node that answers.
	LocalNodeID string
	// Visibility is the delivery deadline new commands get (tests shorten it).
	Visibility time.Duration
	// Keys seals the secrets commands carry (see sealURL).
	Keys *keyring.Keyring
	Now  func() time.Time

	hubOnce sync.Once
	hub     *hub
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) visibility() time.Duration {
	if s.Visibility > 0 {
		return s.Visibility
	}
	return DefaultVisibility
}

// CreateRequest is a new command.
type CreateRequest struct {
	NodeID       string
	EngineNodeID string
	Type         string
	Payload      json.RawMessage
	// IdempotencyKey makes creation idempotent per node: a second create
	// with the same key returns the first command. Without one the key is
	// the command id; the agent sees either kind prefixed (agentKey), so a
	// caller's key can never stand for another command.
	IdempotencyKey string
	Reason         string
	Timeout        time.Duration
	MaxAttempts    int
	Actor          audit.Actor
	// Guards are further compares the creation must pass (the node exists
	// and is not retired), checked in the same Txn; a failed one is
	// ErrGuard.
	Guards []store.Compare
}

var keyRe = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`)

func (req *CreateRequest) validate() error {
	if _, ok := agentapi.CommandTypes[req.Type]; !ok {
		return fmt.Errorf("%w: unknown commandType %q", ErrInvalid, req.Type)
	}
	if len(req.Payload) > MaxPayloadBytes {
		return fmt.Errorf("%w: payload is larger than %d bytes", ErrInvalid, MaxPayloadBytes)
	}
	if len(req.Payload) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(req.Payload, &obj); err != nil {
			return fmt.Errorf("%w: payload must be a JSON object", ErrInvalid)
		}
	}
	if req.IdempotencyKey != "" && !keyRe.MatchString(req.IdempotencyKey) {
		return fmt.Errorf("%w: idempotencyKey must be 1-128 printable ASCII characters", ErrInvalid)
	}
	if len(req.Reason) > 512 {
		return fmt.Errorf("%w: reason must be at most 512 characters", ErrInvalid)
	}
	if req.Timeout < 0 || req.Timeout > MaxTimeout {
		return fmt.Errorf("%w: timeout must be within 1s..24h", ErrInvalid)
	}
	if req.MaxAttempts < 0 || req.MaxAttempts > 10 {
		return fmt.Errorf("%w: maxAttempts must be within 1..10", ErrInvalid)
	}
	return nil
}

func idempotencyEntry(nodeID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return keyPrefix + nodeID + "/" + hex.EncodeToString(sum[:16])
}

// Create stores a Pending command. With an idempotency key already used on
// the node, it returns the existing command and created=false.
func (s *Service) Create(ctx context.Context, req CreateRequest) (*Record, bool, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, false, err
	}
	return s.create(ctx, req, id)
}

func (s *Service) create(ctx context.Context, req CreateRequest, id uuid.UUID) (*Record, bool, error) {
	if err := req.validate(); err != nil {
		return nil, false, err
	}
	now := s.now()
	timeout := req.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	attempts := req.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	// A key the caller gives is unique per node through an entry the
	// create compares; without one the command's own id is the key, which
	// nobody else can have, so no entry is written.
	key := id.String()
	if req.IdempotencyKey != "" {
		key = req.IdempotencyKey
	}
	payload, secret, err := sealURL(req.Type, req.Payload)
	if err != nil {
		return nil, false, err
	}
	exp := now.Add(timeout)
	rec := &Record{CommandID: id.String(), NodeID: req.NodeID, EngineNodeID: req.EngineNodeID, CommandType: req.Type, Payload: payload,
		IdempotencyKey: key, RequestedBy: req.Actor.Type + ":" + req.Actor.ID, Reason: req.Reason, MaxAttempts: attempts, Visibility: s.visibility(),
		CreatedAt: now, CreatedAtMs: now.UnixMilli(), CreatedVia: s.LocalNodeID, ExpiresAt: exp, ExpiresAtMs: exp.UnixMilli()}
	rec.transition(Pending, now, s.LocalNodeID, "created")
	if secret != "" {
		if s.Keys == nil {
			return nil, false, ErrNoKeys
		}
		if rec.SealedSecret, err = s.Keys.Seal([]byte(secret), secretAAD(rec.CommandID, rec.NodeID)); err != nil {
			return nil, false, err
		}
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return nil, false, err
	}
	ops := []store.Op{store.Put(recordKey(rec.CommandID), val)}
	if req.Actor.Type != "" {
		op, err := req.Actor.Success("node.command.created", "node:"+req.NodeID, fmt.Sprintf("%s %s", rec.CommandType, rec.CommandID))
		if err != nil {
			return nil, false, err
		}
		ops = append(ops, op)
	}
	if req.IdempotencyKey == "" {
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: req.Guards, Then: ops})
		if err != nil {
			return nil, false, err
		}
		if !resp.Succeeded {
			return nil, false, ErrGuard
		}
		return rec, true, nil
	}
	entry := idempotencyEntry(req.NodeID, req.IdempotencyKey)
	resp, err := s.Store.Txn(ctx, store.TxnRequest{
		Compares: append([]store.Compare{store.Absent(entry)}, req.Guards...),
		Then:     append(ops, store.Put(entry, []byte(rec.CommandID))),
		Else:     []store.Op{store.GetOp(entry)},
	})
	if err != nil {
		return nil, false, err
	}
	if resp.Succeeded {
		return rec, true, nil
	}
	if len(resp.Responses) == 0 || len(resp.Responses[0].KVs) == 0 {
		// The key is free, so a guard failed.
		return nil, false, ErrGuard
	}
	existing, err := s.Get(ctx, string(resp.Responses[0].KVs[0].Value))
	return existing, false, err
}

// Get reads one command.
func (s *Service) Get(ctx context.Context, id string) (*Record, error) {
	kv, _, err := store.Get(ctx, s.Store, recordKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return decode(kv)
}

func decode(kv *store.KeyValue) (*Record, error) {
	r, err := store.Decode[Record](kv)
	if err != nil {
		return nil, fmt.Errorf("node command %s: %w", kv.Key, err)
	}
	return &r, nil
}

// change is the read-modify-write of one command record.
func (s *Service) change(ctx context.Context, id string, fn func(r *Record) error) (*Record, error) {
	var out *Record
	_, err := store.Update(ctx, s.Store, recordKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		r, err := decode(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := fn(r); err != nil {
			return nil, nil, nil, err
		}
		val, err := json.Marshal(r)
		out = r
		return val, nil, nil, err
	})
	return out, err
}

// Cancel ends a command that has not finished. An agent already running
// it learns of the cancellation at its next acknowledgement, and its result
// is refused.
func (s *Service) Cancel(ctx context.Context, actor audit.Actor, id, reason string) (*Record, error) {
	return s.change(ctx, id, func(r *Record) error {
		if Terminal(r.Status) {
			return fmt.Errorf("%w: %s is %s", ErrFinished, id, r.Status)
		}
		now := s.now()
		r.finish(now)
		r.Error = &Error{Code: "canceled", Message: "canceled by " + actor.Type + ":" + actor.ID + reasonSuffix(reason)}
		r.transition(Canceled, now, s.LocalNodeID, reason)
		return nil
	})
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
