package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	// Plans name IANA zones; the database travels with the binary so a
	// minimal host without /usr/share/zoneinfo evaluates them the same.
	_ "time/tzdata"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
)

// PlanPrefix holds one record per recording plan, keyed by plan id.
const PlanPrefix = "/recording/plans/"

func planKey(id string) string { return PlanPrefix + id }

// Days of the week as plans name them, Sunday first as time.Weekday.
var weekdays = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// Slot is one weekly recording window in the plan's time zone: Day from
// Start to End, wall-clock times HH:MM (End may be 24:00). A window across
// midnight is two slots.
type Slot struct {
	Day   string `json:"day"`
	Start string `json:"start"`
	End   string `json:"end"`
}

// Plan is a weekly recording schedule for some channels. The leader's
// reconciler records each of its channels while the plan is enabled and
// the current time, in the plan's IANA time zone, falls in a slot.
type Plan struct {
	PlanID      string `json:"planId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// TimeZone is an IANA zone (Europe/Berlin); slots are its wall-clock
	// times, so a plan keeps its hours across daylight-saving changes.
	TimeZone       string   `json:"timeZone"`
	Enabled        bool     `json:"enabled"`
	ChannelIDs     []string `json:"channelIds"`
	Weekly         []Slot   `json:"weekly"`
	SegmentSeconds int      `json:"segmentSeconds,omitempty"`
	// RetentionDays keeps its channels' finished recordings this many
	// days (plan_retention.go); 0 leaves them to the engine's retention.
	RetentionDays int       `json:"retentionDays,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	Revision      int64     `json:"-"`
}

// PlanInput is SaveRecordPlanRequest.
type PlanInput struct {
	Name, Description, TimeZone string
	Enabled                     *bool
	ChannelIDs                  []string
	Weekly                      []Slot
	SegmentSeconds              int
	RetentionDays               int
}

// minutes parses HH:MM (00:00-24:00) into minutes of the day.
func minutes(v string) (int, bool) {
	var h, m int
	if len(v) != 5 || v[2] != ':' {
		return 0, false
	}
	if _, err := fmt.Sscanf(v, "%02d:%02d", &h, &m); err != nil || h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, false
	}
	return h*60 + m, true
}

func (in PlanInput) validate() (*time.Location, error) {
	if n := strings.TrimSpace(in.Name); n == "" || len(n) > 128 {
		return nil, fmt.Errorf("%w: name must be 1-128 characters", ErrInvalid)
	}
	if len(in.Description) > 1024 {
		return nil, fmt.Errorf("%w: description must be at most 1024 characters", ErrInvalid)
	}
	if in.TimeZone == "" || strings.EqualFold(in.TimeZone, "local") {
		return nil, fmt.Errorf("%w: timeZone must name an IANA time zone such as Europe/Berlin or UTC", ErrInvalid)
	}
	loc, err := time.LoadLocation(in.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%w: timeZone %q is not an IANA time zone", ErrInvalid, in.TimeZone)
	}
	if len(in.Weekly) == 0 || len(in.Weekly) > 200 {
		return nil, fmt.Errorf("%w: weekly must hold 1-200 slots", ErrInvalid)
	}
	for i, s := range in.Weekly {
		start, ok1 := minutes(s.Start)
		end, ok2 := minutes(s.End)
		switch {
		case !validDay(s.Day):
			return nil, fmt.Errorf("%w: weekly[%d].day %q is not a day of the week (monday ... sunday)", ErrInvalid, i, s.Day)
		case !ok1 || !ok2 || start == 24*60:
			return nil, fmt.Errorf("%w: weekly[%d]: start and end are HH:MM, end up to 24:00", ErrInvalid, i)
		case end <= start:
			return nil, fmt.Errorf("%w: weekly[%d]: end %s is not after start %s (split a window across midnight in two slots)", ErrInvalid, i, s.End, s.Start)
		}
	}
	if len(in.ChannelIDs) > 1000 {
		return nil, fmt.Errorf("%w: at most 1000 channelIds", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, id := range in.ChannelIDs {
		if seen[id] || !nameOK(id) {
			return nil, fmt.Errorf("%w: channelIds: %q is repeated or not an id", ErrInvalid, id)
		}
		seen[id] = true
	}
	if in.SegmentSeconds < 0 || in.SegmentSeconds > 86400 {
		return nil, fmt.Errorf("%w: segmentSeconds is not within 0-86400", ErrInvalid)
	}
	if in.RetentionDays < 0 || in.RetentionDays > MaxRetentionDays {
		return nil, fmt.Errorf("%w: retentionDays is not within 0-%d", ErrInvalid, MaxRetentionDays)
	}
	return loc, nil
}

func validDay(d string) bool {
	for _, w := range weekdays {
		if d == w {
			return true
		}
	}
	return false
}

// Evaluation says whether a time falls in a plan.
type Evaluation struct {
	PlanID  string    `json:"planId"`
	At      time.Time `json:"at"`
	Hit     bool      `json:"hit"`
	Enabled bool      `json:"enabled"`
	// Local is the time in the plan's zone, Day its weekday there.
	Local    string `json:"localTime"`
	Day      string `json:"day"`
	TimeZone string `json:"timeZone"`
	// Slot is the index of the slot the time falls in.
	Slot *int `json:"slot,omitempty"`
}

// Evaluate places at in the plan's zone and finds its slot. Slots are
// wall-clock times, so across a daylight-saving change a slot keeps its
// local hours (and a day of 23 or 25 hours records accordingly).
func (p *Plan) Evaluate(at time.Time) Evaluation {
	ev := Evaluation{PlanID: p.PlanID, At: at.UTC(), Enabled: p.Enabled, TimeZone: p.TimeZone}
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil {
		return ev
	}
	local := at.In(loc)
	ev.Local, ev.Day = local.Format("2006-01-02T15:04:05-07:00"), weekdays[local.Weekday()]
	m := local.Hour()*60 + local.Minute()
	for i, s := range p.Weekly {
		start, _ := minutes(s.Start)
		end, _ := minutes(s.End)
		if s.Day == ev.Day && m >= start && m < end {
			ev.Hit, ev.Slot = true, &i
			break
		}
	}
	return ev
}

// CreatePlan stores a new plan.
func (s *Service) CreatePlan(ctx context.Context, in PlanInput) (*Plan, error) {
	if _, err := in.validate(); err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	now := s.now()
	p := &Plan{PlanID: id.String(), CreatedAt: now}
	p.apply(in, now)
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(planKey(p.PlanID))}, Then: []store.Op{store.Put(planKey(p.PlanID), b)}})
	if err != nil {
		return nil, err
	}
	p.Revision = resp.Header.Revision
	return p, nil
}

func (p *Plan) apply(in PlanInput, now time.Time) {
	p.Name, p.Description, p.TimeZone, p.Weekly, p.SegmentSeconds = strings.TrimSpace(in.Name), in.Description, in.TimeZone, in.Weekly, in.SegmentSeconds
	p.RetentionDays = in.RetentionDays
	p.ChannelIDs = append([]string{}, in.ChannelIDs...)
	p.Enabled = in.Enabled == nil || *in.Enabled
	p.UpdatedAt = now
}

// Plan reads one plan.
func (s *Service) Plan(ctx context.Context, id string) (*Plan, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("%w: plan %q", ErrPlanNotFound, id)
	}
	kv, _, err := store.Get(ctx, s.Store, planKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: plan %q", ErrPlanNotFound, id)
	}
	p, err := store.Decode[Plan](kv)
	if err != nil {
		return nil, err
	}
	p.Revision = kv.ModRevision
	return &p, nil
}

// Plans lists plans by name; name filters by a case-insensitive
// substring. Plans are few (one per schedule), so they are read whole.
func (s *Service) Plans(ctx context.Context, name string) ([]Plan, error) {
	resp, err := s.Store.Range(ctx, PlanPrefix, store.RangeOptions{End: store.PrefixEnd(PlanPrefix)})
	if err != nil {
		return nil, err
	}
	out := []Plan{}
	for _, kv := range resp.KVs {
		p, err := store.Decode[Plan](kv)
		if err != nil {
			return nil, err
		}
		if name != "" && !strings.Contains(strings.ToLower(p.Name), strings.ToLower(name)) {
			continue
		}
		p.Revision = kv.ModRevision
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// UpdatePlan replaces a plan's settings (PUT).
func (s *Service) UpdatePlan(ctx context.Context, id string, in PlanInput) (*Plan, error) {
	if _, err := in.validate(); err != nil {
		return nil, err
	}
	return s.changePlan(ctx, id, func(p *Plan) { p.apply(in, s.now()) })
}

// SetPlanEnabled turns a plan on or off.
func (s *Service) SetPlanEnabled(ctx context.Context, id string, enabled bool) (*Plan, error) {
	return s.changePlan(ctx, id, func(p *Plan) { p.Enabled, p.UpdatedAt = enabled, s.now() })
}

func (s *Service) changePlan(ctx context.Context, id string, fn func(p *Plan)) (*Plan, error) {
	if _, err := s.Plan(ctx, id); err != nil {
		return nil, err
	}
	var out Plan
	resp, err := store.UpdateRecord(ctx, s.Store, planKey(id), func(cur *Plan) (*Plan, []store.Op, []store.Compare, error) {
		if cur == nil {
			return nil, nil, nil, fmt.Errorf("%w: plan %q", ErrPlanNotFound, id)
		}
		fn(cur)
		out = *cur
		return cur, nil, nil, nil
	})
	if errors.Is(err, store.ErrContended) {
		return nil, fmt.Errorf("%w: %w", ErrContended, err)
	}
	if err != nil {
		return nil, err
	}
	out.Revision = resp.Header.Revision
	return &out, nil
}

// DeletePlan removes a plan; its sessions stop at the reconciler's next
// pass.
func (s *Service) DeletePlan(ctx context.Context, id string) error {
	if _, err := s.Plan(ctx, id); err != nil {
		return err
	}
	_, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Delete(planKey(id))}})
	return err
}

// PlanTemplate is an example plan: weekdays 08:00-18:00 in UTC.
func PlanTemplate() Plan {
	p := Plan{Name: "Business hours", TimeZone: "UTC", Enabled: true, ChannelIDs: []string{}}
	for _, d := range weekdays[1:6] {
		p.Weekly = append(p.Weekly, Slot{Day: d, Start: "08:00", End: "18:00"})
	}
	return p
}
