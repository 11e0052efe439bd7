package nodes

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/pki"
)

// Enrollment code lifetimes.
const (
	DefaultCodeTTL = 15 * time.Minute
	MinCodeTTL     = time.Minute
	MaxCodeTTL     = 24 * time.Hour
)

// CodeRecord is a stored enrollment code; the key is the code's SHA-256,
// the code itself is never stored.
type CodeRecord struct {
	NodeID    string    `json:"nodeId"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Enrollment is a freshly issued code, shown once.
type Enrollment struct {
	NodeID    string
	Code      string
	ExpiresAt time.Time
}

var codeEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newCode is 160 random bits in base32, grouped by eight for reading out.
func newCode() (string, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	s := codeEncoding.EncodeToString(b)
	return s[0:8] + "-" + s[8:16] + "-" + s[16:24] + "-" + s[24:32], nil
}

// codeKey is where a code's record lives: the digest of its normalized
// form, so "abcd-efgh..." typed by hand finds the same record.
func codeKey(code string) string {
	norm := strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(code)))
	sum := sha256.Sum256([]byte(norm))
	return CodePrefix + hex.EncodeToString(sum[:])
}

// CreateEnrollment issues a one-time code for nodeID. A node that does not
// exist yet gets a pending record; a retired node id is never enrolled again.
func (s *Service) CreateEnrollment(ctx context.Context, actor audit.Actor, nodeID string, ttl time.Duration) (*Enrollment, error) {
	if err := ValidNodeID(nodeID); err != nil {
		return nil, err
	}
	if ttl == 0 {
		ttl = DefaultCodeTTL
	}
	if ttl < MinCodeTTL || ttl > MaxCodeTTL {
		return nil, fmt.Errorf("%w: ttlSeconds must be within %d..%d", ErrInvalid, int(MinCodeTTL.Seconds()), int(MaxCodeTTL.Seconds()))
	}
	code, err := newCode()
	if err != nil {
		return nil, err
	}
	now := s.now()
	exp := now.Add(ttl).Truncate(time.Second)
	by := actor.Type + ":" + actor.ID
	codeVal, _ := json.Marshal(CodeRecord{NodeID: nodeID, CreatedAt: now, CreatedBy: by, ExpiresAt: exp})
	_, err = store.Update(ctx, s.Store, recordKey(nodeID), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		rec := &Record{NodeID: nodeID, MediaServerID: nodeID, Status: StatusPending, CreatedAt: now, CreatedBy: by, StatusChangedAt: now}
		if kv != nil {
			var err error
			if rec, err = decode(kv); err != nil {
				return nil, nil, nil, err
			}
		}
		if rec.Status == StatusRetired {
			return nil, nil, nil, fmt.Errorf("%w: %q was retired and its id is not reused; enroll the host under a new node id", ErrRetired, nodeID)
		}
		auditOp, err := actor.Success("node.enrollment.created", "node:"+nodeID, fmt.Sprintf("enrollment code issued, valid until %s", exp.Format(time.RFC3339)))
		if err != nil {
			return nil, nil, nil, err
		}
		val, _ := json.Marshal(rec)
		return val, []store.Op{store.Put(codeKey(code), codeVal), auditOp}, []store.Compare{store.Absent(codeKey(code))}, nil
	})
	if err != nil {
		return nil, err
	}
	return &Enrollment{NodeID: nodeID, Code: code, ExpiresAt: exp}, nil
}

// EnrollRequest is what an agent presents with its code.
type EnrollRequest struct {
	Code, CSR, Hostname, AgentVersion, ClientAddress string
}

// Enroll consumes a code exactly once and signs the agent's CSR for the
// code's node. The code's deletion is guarded by a compare on its mod
// revision, so of two concurrent uses one fails; an expired code is
// refused the same way as an unknown one.
func (s *Service) Enroll(ctx context.Context, ca *pki.CA, req EnrollRequest) (*Record, []byte, error) {
	if _, err := pki.ParseCSR([]byte(req.CSR)); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	ckey := codeKey(req.Code)
	ckv, _, err := store.Get(ctx, s.Store, ckey, store.Local)
	if err == nil && ckv == nil {
		// A code issued a moment ago through another control node may not
		// have reached this one yet: catch up with the leader before
		// refusing it.
		ckv, _, err = store.Get(ctx, s.Store, ckey, store.Linearizable)
	}
	if err != nil {
		return nil, nil, err
	}
	if ckv == nil {
		return nil, nil, ErrCodeRefused
	}
	code, err := store.Decode[CodeRecord](ckv)
	if err != nil {
		return nil, nil, fmt.Errorf("enrollment code record: %w", err)
	}
	now := s.now()
	if !now.Before(code.ExpiresAt) {
		return nil, nil, ErrCodeRefused
	}
	nkv, _, err := store.Get(ctx, s.Store, recordKey(code.NodeID), store.Local)
	if err != nil {
		return nil, nil, err
	}
	rec := &Record{NodeID: code.NodeID, MediaServerID: code.NodeID, CreatedAt: now, CreatedBy: code.CreatedBy}
	var nrev int64
	if nkv != nil {
		nrev = nkv.ModRevision
		if rec, err = decode(nkv); err != nil {
			return nil, nil, err
		}
	}
	if rec.Status == StatusRetired {
		return nil, nil, fmt.Errorf("%w: %q", ErrRetired, code.NodeID)
	}
	certPEM, cert, err := ca.SignClient([]byte(req.CSR), code.NodeID, now, pki.ClientLifetime)
	if err != nil {
		return nil, nil, err
	}
	rec.Hostname, rec.AgentVersion = req.Hostname, req.AgentVersion
	rec.EnrolledAt, rec.CertsValidFrom = &now, cert.NotBefore.UTC()
	s.recordCert(rec, cert)
	if rec.Status == StatusPending {
		rec.Status, rec.StatusChangedAt = StatusOffline, now
	}
	if rec.Engine.Media == "" {
		rec.Engine.Media = MediaOffline
	}
	val, _ := json.Marshal(rec)
	auditOp, err := audit.Actor{Type: "node-agent", ID: code.NodeID, ClientAddress: req.ClientAddress}.Success("node.enrolled", "node:"+code.NodeID,
		fmt.Sprintf("agent on host %q enrolled with a one-time code; certificate serial %s", req.Hostname, rec.CertSerial))
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{
		Compares: []store.Compare{store.ModRevisionIs(ckey, ckv.ModRevision), store.ModRevisionIs(recordKey(code.NodeID), nrev)},
		Then:     []store.Op{store.Delete(ckey), store.Put(recordKey(code.NodeID), val), auditOp},
	})
	if err != nil {
		return nil, nil, err
	}
	if !resp.Succeeded {
		return nil, nil, ErrCodeRefused
	}
	return rec, certPEM, nil
}

func (s *Service) recordCert(rec *Record, cert *x509.Certificate) {
	na := cert.NotAfter.UTC()
	rec.CertSerial, rec.CertNotAfter = pki.SerialHex(cert), &na
}

// Renew signs a fresh certificate for an authorized node. Its earlier
// certificates stay valid until they expire, so an agent that fails to save
// the new one keeps working.
func (s *Service) Renew(ctx context.Context, ca *pki.CA, nodeID, csr string) ([]byte, error) {
	if _, err := pki.ParseCSR([]byte(csr)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var certPEM []byte
	_, err := store.Update(ctx, s.Store, recordKey(nodeID), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrNotFound, nodeID)
		}
		rec, err := decode(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		if rec.Status == StatusRetired {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrRetired, nodeID)
		}
		p, cert, err := ca.SignClient([]byte(csr), nodeID, s.now(), pki.ClientLifetime)
		if err != nil {
			return nil, nil, nil, err
		}
		certPEM = p
		s.recordCert(rec, cert)
		val, _ := json.Marshal(rec)
		return val, nil, nil, nil
	})
	return certPEM, err
}

// PurgeExpiredCodes deletes codes past their expiry (a leader task); each
// deletion compares the record it read, so nothing else is touched.
func (s *Service) PurgeExpiredCodes(ctx context.Context) (int, error) {
	resp, err := s.Store.Range(ctx, CodePrefix, store.RangeOptions{End: store.PrefixEnd(CodePrefix)})
	if err != nil {
		return 0, err
	}
	n := 0
	now := s.now()
	var errs []error
	for _, kv := range resp.KVs {
		if c, err := store.Decode[CodeRecord](kv); err == nil && now.Before(c.ExpiresAt) {
			continue
		}
		r, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)}, Then: []store.Op{store.Delete(kv.Key)}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.Succeeded {
			n++
		}
	}
	return n, errors.Join(errs...)
}
