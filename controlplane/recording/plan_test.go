package recording

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/channels"
)

// TestPlanEvaluateAcrossDST: slots are wall-clock times of the plan's
// zone, so Sunday 08:00-09:00 in Europe/Berlin is 07:00Z in winter and
// 06:00Z after the spring change, and the repeated hour of the autumn
// change is inside a 02:00-03:00 slot twice.
func TestPlanEvaluateAcrossDST(t *testing.T) {
	p := &Plan{TimeZone: "Europe/Berlin", Enabled: true, Weekly: []Slot{{Day: "sunday", Start: "08:00", End: "09:00"}, {Day: "sunday", Start: "02:00", End: "03:00"}}}
	cases := []struct {
		at  string
		hit bool
	}{
		{"2026-03-22T07:30:00Z", true},  // 08:30 CET
		{"2026-03-22T06:30:00Z", false}, // 07:30 CET
		{"2026-03-29T06:30:00Z", true},  // 08:30 CEST, the day of the change
		{"2026-03-29T07:30:00Z", false}, // 09:30 CEST
		{"2026-03-29T01:30:00Z", false}, // 03:30 CEST: 02:00-03:00 does not exist that day
		{"2026-10-25T00:30:00Z", true},  // 02:30 CEST
		{"2026-10-25T01:30:00Z", true},  // 02:30 CET, the hour again
		{"2026-10-25T02:30:00Z", false}, // 03:30 CET
		{"2026-10-25T07:30:00Z", true},  // 08:30 CET
		{"2026-10-26T07:30:00Z", false}, // Monday
	}
	for _, c := range cases {
		at, _ := time.Parse(time.RFC3339, c.at)
		if ev := p.Evaluate(at); ev.Hit != c.hit {
			t.Errorf("%s (local %s %s): hit %v, want %v", c.at, ev.Day, ev.Local, ev.Hit, c.hit)
		}
	}
}

func TestPlanValidation(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	good := PlanInput{Name: "Nights", TimeZone: "Asia/Shanghai", Weekly: []Slot{{Day: "monday", Start: "20:00", End: "24:00"}}}
	for name, edit := range map[string]func(*PlanInput){
		"no zone":        func(in *PlanInput) { in.TimeZone = "" },
		"local zone":     func(in *PlanInput) { in.TimeZone = "Local" },
		"unknown zone":   func(in *PlanInput) { in.TimeZone = "Mars/Olympus" },
		"no slots":       func(in *PlanInput) { in.Weekly = nil },
		"bad day":        func(in *PlanInput) { in.Weekly = []Slot{{Day: "funday", Start: "01:00", End: "02:00"}} },
		"end not after":  func(in *PlanInput) { in.Weekly = []Slot{{Day: "monday", Start: "22:00", End: "02:00"}} },
		"bad time":       func(in *PlanInput) { in.Weekly = []Slot{{Day: "monday", Start: "7:00", End: "09:00"}} },
		"past 24":        func(in *PlanInput) { in.Weekly = []Slot{{Day: "monday", Start: "23:00", End: "24:30"}} },
		"no name":        func(in *PlanInput) { in.Name = " " },
		"repeated chans": func(in *PlanInput) { in.ChannelIDs = []string{"a", "a"} },
	} {
		in := good
		edit(&in)
		if _, err := s.CreatePlan(ctx, in); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	p, err := s.CreatePlan(ctx, good)
	if err != nil || !p.Enabled {
		t.Fatalf("create: %+v %v", p, err)
	}
	if p, err = s.SetPlanEnabled(ctx, p.PlanID, false); err != nil || p.Enabled {
		t.Fatalf("disable: %+v %v", p, err)
	}
	if list, err := s.Plans(ctx, "nig"); err != nil || len(list) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	if err := s.DeletePlan(ctx, p.PlanID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Plan(ctx, p.PlanID); !errors.Is(err, ErrPlanNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestEvaluateStream: a channel's autoRecord wins; without it an enabled
// plan's slot decides, by the plan's zone; another media server, or a
// stream no channel has, is not recorded.
func TestEvaluateStream(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	str := func(v string) *string { return &v }
	proto := channels.Protocol("rtsp")
	ch, err := s.Channels.Create(ctx, channels.Actor{}, channels.Input{Name: str("Gate"), Protocol: &proto, SourceURL: str("rtsp://10.0.0.1/s"),
		App: str("live"), Stream: str("gate"), MediaServerID: str("media-1")})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	p, err := s.CreatePlan(ctx, PlanInput{Name: "nights", TimeZone: "Europe/Berlin", Enabled: &yes, ChannelIDs: []string{string(ch.ChannelID)},
		Weekly: []Slot{{Day: "monday", Start: "22:00", End: "24:00"}}})
	if err != nil {
		t.Fatal(err)
	}
	ref := StreamRef{MediaServerID: "media-1", App: "live", StreamID: "gate"}
	in := time.Date(2026, 3, 2, 21, 30, 0, 0, time.UTC) // Monday 22:30 in Berlin
	out := in.Add(-2 * time.Hour)
	for _, c := range []struct {
		ref    StreamRef
		at     time.Time
		record bool
		source string
	}{
		{ref, in, true, RecordPlan},
		{ref, out, false, ""},
		{StreamRef{MediaServerID: "media-2", App: "live", StreamID: "gate"}, in, false, ""},
		{StreamRef{MediaServerID: "media-1", App: "live", StreamID: "nobody"}, in, false, ""},
	} {
		ev, err := s.EvaluateStream(ctx, c.ref, c.at)
		if err != nil || ev.ShouldRecord != c.record || ev.RecordSource != c.source || len(ev.Reasons) == 0 {
			t.Fatalf("%+v at %s: %+v %v", c.ref, c.at, ev, err)
		}
		if c.ref.StreamID == "gate" && (len(ev.Plans) != 1 || ev.Plans[0].PlanID != p.PlanID || ev.ChannelID != string(ch.ChannelID)) {
			t.Fatalf("plans of %+v: %+v", c.ref, ev)
		}
	}
	if _, err := s.EvaluateStream(ctx, StreamRef{MediaServerID: "media-1", App: "../x", StreamID: "gate"}, in); !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("a bad app: %v", err)
	}
}
