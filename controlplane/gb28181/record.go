package gb28181

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
)

// Record queries (GB/T 28181 A.2.4.5): the platform asks a device which
// recordings a channel holds in a time range; the device answers with
// RecordInfo responses, several pages carrying SumNum. A query is a
// replicated record written twice, when it starts and when it ends, so any
// control node answers GET records/query/{taskId}.

// RecordQueryPrefix holds one record per record query.
const RecordQueryPrefix = "/gb28181/record-queries/"

// Record query states.
const (
	QueryRunning = "Running"
	// QuerySucceeded: SumNum entries arrived.
	QuerySucceeded = "Succeeded"
	// QueryIncomplete: the deadline passed with fewer than SumNum (or no
	// answer at all); the entries that came are kept.
	QueryIncomplete = "Incomplete"
)

// Limits of record queries.
const (
	// MaxRecordEntries bounds the SumNum a device may announce.
	MaxRecordEntries = 10_000
	// MaxRecordSpan bounds a query's time range.
	MaxRecordSpan = 31 * 24 * time.Hour
)

// ErrRecordQueryNotFound: 404 not_found.
var ErrRecordQueryNotFound = fault.New(fault.NotFound, "not_found", "no such record query")

// RecordQuery is a query and what the device answered.
type RecordQuery struct {
	TaskID    string    `json:"taskId"`
	DeviceID  DeviceID  `json:"deviceId"`
	ChannelID string    `json:"channelId"`
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	State     string    `json:"state"`
	// SumNum is what the device announced; Records what arrived.
	SumNum     int          `json:"sumNum"`
	Records    []RecordSpan `json:"records"`
	NodeID     string       `json:"nodeId"`
	CreatedAt  time.Time    `json:"createdAt"`
	FinishedAt *time.Time   `json:"finishedAt,omitempty"`
	// sn is the MANSCDP SN the device's pages carry.
	SN int64 `json:"sn"`
}

// RecordSpan is one recording a device reported. The file path and
// recorder id it sent are not kept: playback addresses a recording by
// channel and time range, and the device's locators are its own.
type RecordSpan struct {
	RecordID  string    `json:"recordId"`
	Name      string    `json:"name,omitempty"`
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	Type      string    `json:"type,omitempty"`
	Secrecy   int       `json:"secrecy"`
	FileSize  int64     `json:"fileSize,omitempty"`
}

// recordRun collects the pages of one RecordInfo response in memory.
type recordRun struct {
	q     RecordQuery
	seen  map[string]bool
	idle  time.Duration
	timer *time.Timer
	done  bool
}

// manscdpTime is MANSCDP's time format: local time without a zone.
const manscdpTime = "2006-01-02T15:04:05"

// StartRecordQuery sends a RecordInfo query for one channel and returns
// the Running query; the device's pages complete it, or idle (time without
// a page) ends it Incomplete with what arrived.
func (s *Service) StartRecordQuery(ctx context.Context, id DeviceID, channelID string, start, end time.Time, idle time.Duration) (*RecordQuery, error) {
	if !ValidCode(string(id)) || !ValidCode(channelID) {
		return nil, fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	if !end.After(start) || end.Sub(start) > MaxRecordSpan {
		return nil, fmt.Errorf("%w: endTime must be after startTime and within %s of it", ErrInvalid, MaxRecordSpan)
	}
	if idle <= 0 {
		idle = s.cfg.CatalogTimeout
	}
	h, err := s.holder(ctx, id)
	if err != nil {
		return nil, err
	}
	if h != "" {
		return s.relay.StartRecordQuery(ctx, h, RecordQueryRequest{DeviceID: id, ChannelID: channelID, Start: start, End: end, Idle: idle})
	}
	return s.LocalStartRecordQuery(ctx, RecordQueryRequest{DeviceID: id, ChannelID: channelID, Start: start, End: end, Idle: idle})
}

// LocalStartRecordQuery is StartRecordQuery through this node's transport
// only: what a relayed query runs. This node collects the pages and
// stores the result, which every node reads.
func (s *Service) LocalStartRecordQuery(ctx context.Context, r RecordQueryRequest) (*RecordQuery, error) {
	id, channelID, start, end, idle := r.DeviceID, r.ChannelID, r.Start, r.End, r.Idle
	if !ValidCode(string(id)) || !ValidCode(channelID) {
		return nil, fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	if !end.After(start) || end.Sub(start) > MaxRecordSpan {
		return nil, fmt.Errorf("%w: endTime must be after startTime and within %s of it", ErrInvalid, MaxRecordSpan)
	}
	if idle <= 0 {
		idle = s.cfg.CatalogTimeout
	}
	if !s.registered(id) {
		return nil, fmt.Errorf("%w: %s has no transport on this node", ErrDeviceOffline, id)
	}
	tid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	sn := s.nextSN()
	run := &recordRun{q: RecordQuery{TaskID: tid.String(), DeviceID: id, ChannelID: channelID, StartTime: start.UTC(), EndTime: end.UTC(),
		State: QueryRunning, Records: []RecordSpan{}, NodeID: s.nodeID, CreatedAt: s.now().UTC(), SN: sn}, seen: map[string]bool{}, idle: idle}
	if err := s.putRecordQuery(ctx, run.q); err != nil {
		return nil, err
	}
	q := run.q
	s.mu.Lock()
	s.records[sn] = run
	run.timer = time.AfterFunc(idle, func() { s.finishRecords(run) })
	s.mu.Unlock()
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Query>\r\n<CmdType>RecordInfo</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n"+
		"<StartTime>%s</StartTime>\r\n<EndTime>%s</EndTime>\r\n<Secrecy>0</Secrecy>\r\n<Type>all</Type>\r\n</Query>\r\n",
		sn, channelID, start.Local().Format(manscdpTime), end.Local().Format(manscdpTime))
	if err := s.sendManscdp(ctx, id, body); err != nil {
		s.finishRecords(run)
		return nil, fmt.Errorf("%w: %w", ErrDeviceUnreachable, err)
	}
	return &q, nil
}

// recordPage adds one RecordInfo response page to its run (found by SN).
func (s *Service) recordPage(id DeviceID, m Manscdp) {
	s.mu.Lock()
	run := s.records[m.SN]
	if run == nil || run.q.DeviceID != id || run.done {
		s.mu.Unlock()
		s.log.Info("GB28181 RecordInfo without a query", zap.String("deviceId", string(id)), zap.Int64("sn", m.SN))
		return
	}
	if m.SumNum < 0 || m.SumNum > MaxRecordEntries {
		s.mu.Unlock()
		s.log.Info("GB28181 RecordInfo refused", zap.String("deviceId", string(id)), zap.Int("sumNum", m.SumNum))
		return
	}
	run.q.SumNum = m.SumNum
	for _, it := range m.RecordList {
		if len(run.q.Records) >= run.q.SumNum {
			break // more than announced: ignored
		}
		start, err1 := time.ParseInLocation(manscdpTime, it.StartTime, time.Local)
		end, err2 := time.ParseInLocation(manscdpTime, it.EndTime, time.Local)
		if err1 != nil || err2 != nil || !end.After(start) {
			continue
		}
		key := it.DeviceID + "|" + it.StartTime + "|" + it.EndTime
		if run.seen[key] {
			continue // a page sent twice
		}
		run.seen[key] = true
		run.q.Records = append(run.q.Records, RecordSpan{Name: it.Name,
			StartTime: start.UTC(), EndTime: end.UTC(), Type: it.Type, Secrecy: it.Secrecy, FileSize: it.FileSize})
	}
	done := len(run.q.Records) >= run.q.SumNum
	if !done {
		run.timer.Reset(run.idle)
	}
	s.mu.Unlock()
	if done {
		s.finishRecords(run)
	}
}

// finishRecords writes a run's result once.
func (s *Service) finishRecords(run *recordRun) {
	s.mu.Lock()
	if run.done {
		s.mu.Unlock()
		return
	}
	run.done = true
	run.timer.Stop()
	delete(s.records, run.q.SN)
	q := run.q
	s.mu.Unlock()
	// Pages are handled as they arrive, possibly at once: the result is
	// ordered by time, not by which page's handler ran first, and numbered
	// in that order.
	slices.SortStableFunc(q.Records, func(a, b RecordSpan) int {
		if c := a.StartTime.Compare(b.StartTime); c != 0 {
			return c
		}
		return a.EndTime.Compare(b.EndTime)
	})
	for i := range q.Records {
		q.Records[i].RecordID = strconv.Itoa(i + 1)
	}
	q.State = QueryIncomplete
	if q.SumNum > 0 && len(q.Records) >= q.SumNum {
		q.State = QuerySucceeded
	}
	t := s.now().UTC()
	q.FinishedAt = &t
	if err := s.putRecordQuery(context.WithoutCancel(s.ctx), q); err != nil {
		s.log.Warn("GB28181 record query result not stored", zap.String("taskId", q.TaskID), zap.Error(err))
	}
}

func (s *Service) putRecordQuery(ctx context.Context, q RecordQuery) error {
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	_, err = s.store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(RecordQueryPrefix+q.TaskID, b)}})
	return err
}

// GetRecordQuery reads a record query.
func GetRecordQuery(ctx context.Context, st store.Store, taskID string) (*RecordQuery, error) {
	if _, err := uuid.Parse(taskID); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrRecordQueryNotFound, taskID)
	}
	kv, _, err := store.Get(ctx, st, RecordQueryPrefix+taskID, store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %s", ErrRecordQueryNotFound, taskID)
	}
	q, err := store.Decode[RecordQuery](kv)
	if err != nil {
		return nil, err
	}
	return &q, nil
}
