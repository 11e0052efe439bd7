package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// cursorKey holds the store revision up to which the outbox has been fanned
// out; it moves in the same Txn as the deliveries it covers.
const cursorKey = "/webhooks/dispatch/cursor"

// idleCursorEvery is how often the cursor is moved over outbox entries
// that gave no delivery (no plan takes them). Moving it is a replicated
// write; at a thousand engine hooks a second and no subscription, writing
// it for every batch doubled the store's writes. A dispatcher that takes
// over reads the outbox again from the cursor, which is at most this much
// behind, and those entries still give no delivery: plans created since
// only take events committed after them.
const idleCursorEvery = time.Second

// Default concurrency of the dispatcher: POSTs in flight per plan and in
// all.
const (
	DefaultPerPlan     = 32
	DefaultMaxInFlight = 512
)

// Dispatcher delivers deliveries. Run it only on the ready raft leader
// (node.Leadership().Run): the store's compares keep a deposed leader from
// overwriting its successor, and its successor recovers the deposed
// leader's claims.
type Dispatcher struct {
	Store   store.Store
	Reader  query.Reader
	Keys    *keyring.Keyring
	Targets *TargetGuard
	NodeID  string
	Clock   events.Clock
	Log     *zap.Logger
	// PerPlan bounds the concurrent POSTs to one plan, so one slow
	// receiver holds at most that many slots; MaxInFlight bounds all.
	PerPlan, MaxInFlight int
	// Random returns a uniform number in [0, 1) for jitter.
	Random func() float64

	once    sync.Once
	wake    chan struct{}
	client  *http.Client
	secrets sync.Map // sealed secret -> []byte
	running atomic.Bool
	flight  atomic.Int64
	sent    atomic.Int64
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.wake = make(chan struct{}, 1)
		if d.Clock == nil {
			d.Clock = events.SystemClock{}
		}
		if d.Log == nil {
			d.Log = zap.NewNop()
		}
		if d.PerPlan <= 0 {
			d.PerPlan = DefaultPerPlan
		}
		if d.MaxInFlight <= 0 {
			d.MaxInFlight = DefaultMaxInFlight
		}
		if d.Random == nil {
			d.Random = rand.Float64
		}
		guard := d.Targets
		if guard == nil {
			guard = &TargetGuard{}
		}
		dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: guard.control}
		d.client = &http.Client{
			Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, ForceAttemptHTTP2: true,
				MaxIdleConns: 1024, MaxIdleConnsPerHost: d.MaxInFlight, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second},
			// A redirect is an answer, not a new target: following it would
			// bypass the endpoint checks.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
}

// Kick wakes the dispatcher (when running here) to look for work now.
func (d *Dispatcher) Kick() {
	d.init()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Running reports whether this node's dispatcher is active, and how many
// POSTs it has in flight.
func (d *Dispatcher) Running() (bool, int64) { return d.running.Load(), d.flight.Load() }

// Sent counts attempts made by this node since start.
func (d *Dispatcher) Sent() int64 { return d.sent.Load() }

// session is one leadership term's dispatching.
type session struct {
	d        *Dispatcher
	id       string
	mu       sync.Mutex
	perPlan  map[PlanID]int
	inFlight int
	// round counts claim rounds, to rotate which plan goes first.
	round   int
	results chan result
	wg      sync.WaitGroup
	// cursorAt is when this session last wrote the cursor.
	cursorAt time.Time
	// planCache holds the plans as last read; planGen counts changes seen
	// under PlanPrefix, so a read racing a change is not cached.
	planMu    sync.Mutex
	planCache []planAt
	planGen   uint64
}

// plans returns the current plans, from the cache while no plan changed.
// A stale answer can only make a claim's compare fail, never let a claim
// through: the claim Txn compares each plan's mod revision.
func (s *session) plans(ctx context.Context) ([]planAt, error) {
	s.planMu.Lock()
	cached, gen := s.planCache, s.planGen
	s.planMu.Unlock()
	if cached != nil {
		return cached, nil
	}
	fresh, err := listPlans(ctx, s.d.Store)
	if err != nil {
		return nil, err
	}
	s.planMu.Lock()
	if s.planGen == gen {
		s.planCache = fresh
	}
	s.planMu.Unlock()
	return fresh, nil
}

// forgetPlans drops the plan cache.
func (s *session) forgetPlans() {
	s.planMu.Lock()
	s.planCache = nil
	s.planGen++
	s.planMu.Unlock()
}

// result is the outcome of one attempt.
type result struct {
	key      string
	claimRev int64
	rec      Delivery
	status   int
	err      string
	retry    time.Duration
	at       time.Time
	took     time.Duration
	// gone means the event left the outbox: retrying cannot help.
	gone bool
}

// Run dispatches until ctx ends (leadership lost or shutdown).
func (d *Dispatcher) Run(ctx context.Context) {
	d.init()
	s := &session{d: d, id: uuid.NewString(), perPlan: map[PlanID]int{}, results: make(chan result, 1024)}
	d.Log.Info("webhook dispatcher started", zap.String("session", s.id))
	for ctx.Err() == nil {
		err := s.recover(ctx)
		if err == nil {
			break
		}
		d.Log.Warn("recovering webhook claims failed; retrying", zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	// Running from here: earlier claims are recovered, and the orphan
	// sweep counts from now.
	started := d.Clock.Now()
	d.running.Store(true)
	defer d.running.Store(false)
	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); s.fanoutLoop(ctx) }()
	go func() { defer loops.Done(); s.watchLoop(ctx) }()
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); s.resultLoop() }()
	go func() { defer loops.Done(); s.claimLoop(ctx, started) }()
	loops.Wait()
	s.wg.Wait() // attempts end with ctx
	close(s.results)
	<-writerDone
	d.Log.Info("webhook dispatcher stopped", zap.String("session", s.id))
}

// recover takes over claims left by an earlier session: their outcome is
// unknown, so they are due again now, whatever is left of the plan's
// maximum. The interrupted attempt stays counted: the contract counts the
// POSTs made, and the receiver may well have had this one (a delivery sent
// again after a failover shows two attempts). At the start of a session
// every claim is an earlier one's.
func (s *session) recover(ctx context.Context) error {
	return s.recoverOrphans(ctx, time.Time{})
}

// orphanGrace is how long a claim of another session may stay unanswered
// before this session takes it over: longer than any plan's timeout, so a
// deposed leader finishing its last attempts gets to record them.
const orphanGrace = 2 * MaxTimeout * time.Second

// recoverOrphans takes over the claims of other sessions; with a non-zero
// claimedBefore only those claimed before it. Besides the start of a
// session, the claim loop runs it now and then: a deposed leader can still
// get a claim through in the moment before it notices, and then die.
func (s *session) recoverOrphans(ctx context.Context, claimedBefore time.Time) error {
	after := ""
	for {
		held, err := queryDeliveries(ctx, s.d.Reader, []query.Cond{query.Eq("state", "Delivering"), query.Gt(query.Key, after)}, query.Asc(query.Key), 200)
		if err != nil || len(held) == 0 {
			return err
		}
		after = held[len(held)-1].key
		now := s.d.Clock.Now().UTC()
		var req store.TxnRequest
		for _, h := range held {
			r := &h.rec
			if !claimedBefore.IsZero() && (r.Claim == nil || r.Claim.Session == s.id || !r.Claim.At.Before(claimedBefore)) {
				continue
			}
			at := now
			if r.LastAttemptAt != nil {
				at = *r.LastAttemptAt
			}
			r.State, r.Claim, r.UpdatedAt, r.DueMs = StateWaitingRetry, nil, now, now.UnixMilli()
			r.NextAttemptAt = &now
			r.ErrorSummary = "attempt interrupted: the dispatching leader was lost before the outcome was recorded"
			r.Log = append(r.Log, Attempt{At: at, Error: r.ErrorSummary})
			if len(r.Log) > attemptLogSize {
				r.Log = r.Log[len(r.Log)-attemptLogSize:]
			}
			op, err := r.put()
			if err != nil {
				return err
			}
			req.Compares = append(req.Compares, store.ModRevisionIs(h.key, h.modRev))
			req.Then = append(req.Then, op)
		}
		if len(req.Then) > 0 {
			resp, err := s.d.Store.Txn(ctx, req)
			if err != nil {
				return err
			}
			if resp.Succeeded {
				s.d.Log.Info("recovered webhook claims of an earlier leader", zap.Int("count", len(req.Then)))
			}
		}
		if len(held) < 200 {
			return nil
		}
	}
}

// watchLoop wakes the claim loop on any change under /webhooks/ (a retry
// or a plan change made through another node).
func (s *session) watchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		// Every plan change after rev reaches this watch, so a cache filled
		// from any later read is dropped when it goes stale.
		rev := s.d.Store.Revision()
		s.forgetPlans()
		for resp := range s.d.Store.Watch(ctx, "/webhooks/", rev+1) {
			if resp.Err != nil {
				break
			}
			for _, ev := range resp.Events {
				if strings.HasPrefix(ev.KV.Key, PlanPrefix) {
					s.forgetPlans()
					break
				}
			}
			s.d.Kick()
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fanoutLoop turns every new outbox event into one Pending delivery per
// matching enabled plan, moving the cursor in the same Txn.
func (s *session) fanoutLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if err := s.fanout(ctx); err != nil && ctx.Err() == nil {
			s.d.Log.Warn("webhook fan-out failed; retrying", zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

type cursorValue struct {
	Revision int64 `json:"revision"`
}

// readCursor returns the fan-out cursor's revision and the cursor key's
// own mod revision (0, 0 before the first fan-out).
func readCursor(ctx context.Context, st store.Store) (int64, int64, error) {
	kv, _, err := store.Get(ctx, st, cursorKey, store.Local)
	if err != nil || kv == nil {
		return 0, 0, err
	}
	c, err := store.Decode[cursorValue](kv)
	if err != nil {
		return 0, 0, err
	}
	return c.Revision, kv.ModRevision, nil
}

// fanout follows the outbox from the cursor until ctx ends or the cursor
// moved under it (then the caller starts again).
func (s *session) fanout(ctx context.Context) error {
	cur, cursorRev, err := readCursor(ctx, s.d.Store)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := s.d.Store.Watch(wctx, events.OutboxPrefix, cur+1)
	for {
		var batch []store.Event
		var resp store.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case resp, ok = <-watch:
		}
		for {
			if !ok {
				return errors.New("outbox watch ended")
			}
			if resp.Err != nil {
				if errors.Is(resp.Err, store.ErrCompacted) {
					return s.scanFanout(ctx, cur, cursorRev)
				}
				return resp.Err
			}
			batch = append(batch, resp.Events...)
			if len(batch) >= 500 {
				break
			}
			select {
			case resp, ok = <-watch:
				continue
			default:
			}
			break
		}
		var created []*store.KeyValue
		for _, ev := range batch {
			if ev.Type == store.EventPut && ev.KV.Version == 1 {
				created = append(created, ev.KV)
			}
		}
		if len(batch) == 0 {
			continue
		}
		last := batch[len(batch)-1].KV.ModRevision
		newRev, err := s.commitFanout(ctx, created, cur, cursorRev, last, false)
		if err != nil {
			return err
		}
		cur, cursorRev = last, newRev
	}
}

// commitFanout writes the deliveries of the created outbox entries and
// moves the cursor to upto, guarded by the cursor's mod revision. check
// skips deliveries that already exist (the recovery scan).
func (s *session) commitFanout(ctx context.Context, created []*store.KeyValue, cur, cursorRev, upto int64, check bool) (int64, error) {
	// Fresh plans, not the cache: an event committed after a plan was
	// created must reach it.
	plans, err := listPlans(ctx, s.d.Store)
	if err != nil {
		return 0, err
	}
	now := s.d.Clock.Now().UTC()
	val, _ := json.Marshal(cursorValue{Revision: max(upto, cur)})
	req := store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(cursorKey, cursorRev)}, Then: []store.Op{store.Put(cursorKey, val)}}
	// Deliveries of plans with a free slot are created already claimed
	// (Pending and the claim in one compare-guarded Txn, the plan's mod
	// revision compared as a claim does): one write less per delivery and
	// no wait for the claim loop.
	type preclaimed struct {
		key   string
		rec   Delivery
		event []byte
		plan  Plan
	}
	var pre []preclaimed
	unreserve := func() {
		for _, c := range pre {
			s.release(c.plan.ID)
		}
	}
	live := plans[:0:0]
	for _, p := range plans {
		if !p.Archived && p.Enabled {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		created = nil // nothing to decode: no plan takes deliveries
	}
	compared := map[PlanID]bool{}
	for _, kv := range created {
		entry, err := events.DecodeEntry(kv.Value)
		if err != nil || entry.TargetSubscriptionID != "" {
			continue // a test event's delivery was created with it
		}
		for _, p := range live {
			if kv.CreateRevision <= p.created || !events.Matches(p.Events, entry.EventName) {
				continue
			}
			d := newDelivery(entry, p.ID, now, false)
			if check {
				if kv, _, err := store.Get(ctx, s.d.Store, deliveryKey(d.ID), store.Local); err != nil || kv != nil {
					continue
				}
			} else if s.reserve(p.ID) {
				d.State, d.Attempts, d.DueMs, d.LastAttemptAt = StateDelivering, 1, 0, &now
				d.Claim = &Claim{NodeID: s.d.NodeID, Session: s.id, At: now}
				pre = append(pre, preclaimed{key: deliveryKey(d.ID), rec: d, event: kv.Value, plan: p.Plan})
				if !compared[p.ID] {
					compared[p.ID] = true
					req.Compares = append(req.Compares, store.ModRevisionIs(p.key(), p.rev))
				}
			}
			op, err := d.put()
			if err != nil {
				unreserve()
				return 0, err
			}
			req.Then = append(req.Then, op)
		}
	}
	if len(req.Then) == 1 && !check && now.Sub(s.cursorAt) < idleCursorEvery {
		return cursorRev, nil // only the cursor would move (see idleCursorEvery)
	}
	resp, err := s.d.Store.Txn(ctx, req)
	if err != nil {
		unreserve()
		return 0, err
	}
	s.cursorAt = now
	if !resp.Succeeded {
		unreserve()
		return 0, errors.New("the fan-out cursor or a plan changed under this dispatcher")
	}
	for _, c := range pre {
		s.wg.Add(1)
		go s.attempt(ctx, c.key, resp.Header.Revision, c.rec, c.event, c.plan)
	}
	if len(req.Then) > 1+len(pre) {
		s.d.Kick() // Pending deliveries for the claim loop
	}
	return resp.Header.Revision, nil
}

// scanFanout is the fallback when the watch history after the cursor was
// compacted: it pages through the outbox for entries created after the
// cursor, skipping deliveries that exist.
func (s *session) scanFanout(ctx context.Context, cur, cursorRev int64) error {
	top := s.d.Store.Revision()
	s.d.Log.Warn("outbox history after the fan-out cursor was compacted; scanning the outbox", zap.Int64("cursor", cur), zap.Int64("revision", top))
	start := events.OutboxPrefix
	end := store.PrefixEnd(events.OutboxPrefix)
	for {
		resp, err := s.d.Store.Range(ctx, start, store.RangeOptions{End: end, Limit: 500})
		if err != nil {
			return err
		}
		var created []*store.KeyValue
		for _, kv := range resp.KVs {
			if kv.CreateRevision > cur && kv.CreateRevision <= top {
				created = append(created, kv)
			}
		}
		if cursorRev, err = s.commitFanout(ctx, created, cur, cursorRev, cur, true); err != nil {
			return err
		}
		if !resp.More || len(resp.KVs) == 0 {
			break
		}
		start = resp.KVs[len(resp.KVs)-1].Key + "\x00"
	}
	_, err := s.commitFanout(ctx, nil, cur, cursorRev, top, false)
	return err
}

// claimLoop claims due deliveries while there are free slots, and sleeps
// until the next is due, a slot frees up or something changes.
func (s *session) claimLoop(ctx context.Context, lastSweep time.Time) {
	for ctx.Err() == nil {
		if now := s.d.Clock.Now(); now.Sub(lastSweep) >= orphanGrace {
			lastSweep = now
			if err := s.recoverOrphans(ctx, now.Add(-orphanGrace)); err != nil && ctx.Err() == nil {
				s.d.Log.Warn("recovering orphaned webhook claims failed", zap.Error(err))
			}
		}
		next, err := s.claimDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.d.Log.Warn("claiming webhook deliveries failed", zap.Error(err))
			next = 500 * time.Millisecond
		}
		if next == 0 {
			continue
		}
		select {
		case <-ctx.Done():
		case <-s.d.wake:
		case <-s.d.Clock.After(next):
		}
	}
}

// idleWait is the longest the claim loop sleeps without news.
const idleWait = 30 * time.Second

// claimDue claims what is due now and returns how long to wait before
// looking again (0: look again at once).
func (s *session) claimDue(ctx context.Context) (time.Duration, error) {
	s.mu.Lock()
	free := s.d.MaxInFlight - s.inFlight
	s.mu.Unlock()
	now := s.d.Clock.Now().UTC()
	if free <= 0 {
		return idleWait, nil
	}
	// The watch on /webhooks/ drops the cache before it wakes this loop,
	// so a plan created meanwhile is seen by the round its change starts.
	plans, err := s.plans(ctx)
	if err != nil {
		return 0, err
	}
	byID := map[PlanID]planAt{}
	for _, p := range plans {
		byID[p.ID] = p
	}
	// Candidates come from the index alone, per plan that has free slots,
	// each a range scan of its own due deliveries (plan_due) limited to
	// what it can take: a long queue behind one busy or stuck receiver
	// costs nothing and hides nothing. Plans take turns at going first, so
	// the global limit does not always fall on the same ones.
	var picked []storedDelivery
	order := make([]planAt, 0, len(plans))
	for _, p := range plans {
		if !p.Archived {
			order = append(order, p)
		}
	}
	s.round++
	err = s.d.Reader.View(ctx, func(v query.View) error {
		var keys []string
		for i := range order {
			p := order[(i+s.round)%len(order)]
			s.mu.Lock()
			busy := s.perPlan[p.ID]
			room := min(s.d.PerPlan-busy, free-len(keys))
			s.mu.Unlock()
			// A busy plan is topped up only once a quarter of its slots
			// are free: one claim Txn for several deliveries instead of
			// one per finished POST. Its next finished POST wakes the
			// loop again, so nothing waits longer than a POST.
			if room <= 0 || (busy > 0 && room < max(1, s.d.PerPlan/4)) {
				continue
			}
			where := []query.Cond{query.Gt("plan_due", string(p.ID)+"/"), query.Le("plan_due", planDue(p.ID, now.UnixMilli())),
				query.In("state", "Pending", "WaitingRetry")}
			if !p.Enabled {
				where = append(where, query.Eq("test", 1)) // a disabled plan still takes its test events
			}
			due, err := v.Keys(query.Query{Index: DeliveryIndex.Name, Where: where, Order: []query.Order{query.Asc("plan_due")},
				Limit: room, Using: "plan_due"})
			if err != nil {
				return err
			}
			keys = append(keys, due...)
		}
		if len(keys) == 0 {
			return nil
		}
		rows, err := v.Get(keys...)
		if err != nil {
			return err
		}
		for _, row := range rows {
			if rec, err := query.JSON[Delivery](row); err == nil {
				picked = append(picked, storedDelivery{key: row.Key, modRev: row.ModRevision, rec: rec})
			}
		}
		return s.loadEvents(v, picked)
	})
	if err != nil {
		return 0, err
	}

	if len(picked) > 0 {
		if err := s.claim(ctx, picked, byID, now); err != nil {
			return 0, err
		}
		return 0, nil // more may be due: look again at once
	}
	return s.nextDue(ctx, now)
}

// claim moves picked deliveries Pending/WaitingRetry -> Delivering in one
// Txn that compares each delivery and its plan, then starts their POSTs.
func (s *session) claim(ctx context.Context, picked []storedDelivery, plans map[PlanID]planAt, now time.Time) error {
	var req store.TxnRequest
	seen := map[PlanID]bool{}
	for i := range picked {
		d := &picked[i]
		p := plans[d.rec.SubscriptionID]
		if !seen[p.ID] {
			seen[p.ID] = true
			req.Compares = append(req.Compares, store.ModRevisionIs(p.key(), p.rev))
		}
		r := &d.rec
		r.State, r.Attempts, r.UpdatedAt, r.LastAttemptAt, r.DueMs, r.NextAttemptAt = StateDelivering, r.Attempts+1, now, &now, 0, nil
		r.Claim = &Claim{NodeID: s.d.NodeID, Session: s.id, At: now}
		op, err := r.put()
		if err != nil {
			return err
		}
		req.Compares = append(req.Compares, store.ModRevisionIs(d.key, d.modRev))
		req.Then = append(req.Then, op)
	}
	resp, err := s.d.Store.Txn(ctx, req)
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		s.forgetPlans()
		return nil // something changed meanwhile; the next round reads it
	}
	for _, d := range picked {
		p := plans[d.rec.SubscriptionID].Plan
		s.mu.Lock()
		s.perPlan[p.ID]++
		s.inFlight++
		s.mu.Unlock()
		s.d.flight.Add(1)
		s.wg.Add(1)
		go s.attempt(ctx, d.key, resp.Header.Revision, d.rec, d.event, p)
	}
	return nil
}

// loadEvents reads the outbox entries of the picked deliveries in the same
// read transaction, so an attempt does not read the store again.
func (s *session) loadEvents(v query.View, picked []storedDelivery) error {
	if len(picked) == 0 {
		return nil
	}
	keys := make([]string, 0, len(picked))
	for _, d := range picked {
		keys = append(keys, events.OutboxPrefix+d.rec.EventID)
	}
	rows, err := v.Get(keys...)
	found := map[string][]byte{}
	for _, row := range rows {
		found[row.Key[len(events.OutboxPrefix):]] = row.Value
	}
	for i := range picked {
		picked[i].event = found[picked[i].rec.EventID]
	}
	return err
}

// nextDue is how long until the earliest WaitingRetry delivery is due.
func (s *session) nextDue(ctx context.Context, now time.Time) (time.Duration, error) {
	next, err := queryDeliveries(ctx, s.d.Reader, []query.Cond{query.Eq("state", "WaitingRetry")}, query.Asc("due_ms"), 1)
	if err != nil || len(next) == 0 {
		return idleWait, err
	}
	wait := time.UnixMilli(next[0].rec.DueMs).Sub(now)
	return min(max(wait, time.Millisecond), idleWait), nil
}

// reserve takes a slot of the plan for a delivery about to be claimed.
func (s *session) reserve(id PlanID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perPlan[id] >= s.d.PerPlan || s.inFlight >= s.d.MaxInFlight {
		return false
	}
	s.perPlan[id]++
	s.inFlight++
	s.d.flight.Add(1)
	return true
}

func (s *session) release(id PlanID) {
	s.mu.Lock()
	s.perPlan[id]--
	s.inFlight--
	s.mu.Unlock()
	s.d.flight.Add(-1)
	s.d.Kick()
}
