// Package audit keeps the security audit log: an append-only record of
// logins, token and permission changes and permission denials, each with the
// actor, client address, outcome, trace id and time. A record that describes
// a change is written in the same store transaction as the change itself, so
// there is no change without its record and no record without its change.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// KeyPrefix holds one record per event; keys are UUIDv7, so key order is
// time order.
const KeyPrefix = "/security/audit/"

// Index declares the typed index the queries use.
var Index = query.Index{Name: "audit", Prefix: KeyPrefix, Columns: []query.Column{
	{Name: "event_type", Type: "TEXT", Path: "$.eventType"},
	{Name: "outcome", Type: "TEXT", Path: "$.outcome"},
	{Name: "occurred_at", Type: "TEXT", Path: "$.occurredAt"},
}}

// Outcomes of an audited action.
const (
	Success = "success"
	Failure = "failure"
	Denied  = "denied"
)

// Record is one audit entry. It never holds a secret.
type Record struct {
	AuditID       string    `json:"auditId"`
	EventType     string    `json:"eventType"`
	Outcome       string    `json:"outcome"`
	ActorType     string    `json:"actorType"`
	ActorID       string    `json:"actorId"`
	ClientAddress string    `json:"clientAddress"`
	TraceID       string    `json:"traceId"`
	OccurredAt    time.Time `json:"occurredAt"`
	Target        string    `json:"target"`
	Message       string    `json:"message"`
}

// Op returns the store operation that appends rec, filling its id and time.
func Op(rec Record) (store.Op, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return store.Op{}, err
	}
	rec.AuditID = id.String()
	if rec.OccurredAt.IsZero() {
		rec.OccurredAt = time.Now().UTC()
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(KeyPrefix+rec.AuditID, val), nil
}

// Actor is who performed an audited action.
type Actor struct {
	Type, ID, ClientAddress, TraceID string
}

// Success returns the store operation that records a successful action by
// a; put it in the same Txn as the change it describes.
func (a Actor) Success(event, target, msg string) (store.Op, error) {
	return Op(Record{EventType: event, Outcome: Success, ActorType: a.Type, ActorID: a.ID,
		ClientAddress: a.ClientAddress, TraceID: a.TraceID, Target: target, Message: msg})
}

// Reader is the local state the queries run on.
type Reader = query.Reader

// Query filters a listing; zero values do not filter.
type Query struct {
	EventType string
	Outcome   string
	Before    *time.Time
	Page      int
	PageSize  int
}

// List returns one page of records, newest first, and the total matching.
func List(ctx context.Context, r Reader, q Query) ([]Record, int64, error) {
	var where query.Where
	where.EqIfSet("event_type", q.EventType)
	where.EqIfSet("outcome", q.Outcome)
	if q.Before != nil {
		// UUIDv7 keys start with the millisecond timestamp, so key order is
		// time order (text comparison of RFC 3339 times is not).
		where.Add(query.Lt(query.Key, keyBefore(*q.Before)))
	}
	return query.Page(ctx, r, query.Query{Index: Index.Name, Where: where, Order: []query.Order{query.Desc(query.Key)}},
		q.Page, q.PageSize, query.JSON[Record])
}

// keyBefore is the smallest key of a record created at t (millisecond
// precision), as the first 48 bits of a UUIDv7 in its text form.
func keyBefore(t time.Time) string {
	ms := uint64(t.UnixMilli())
	return fmt.Sprintf("%s%08x-%04x", KeyPrefix, ms>>16, ms&0xffff)
}
