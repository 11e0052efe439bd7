package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// fakeResolver answers every name with fixed addresses.
type fakeResolver struct {
	lookup func(host string) ([]netip.Addr, error)
}

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f.lookup(host)
}

func validInput() PlanInput {
	return PlanInput{Name: "crm", Description: "CRM backend", Endpoint: "https://hooks.example.com/svc", Secret: strings.Repeat("s", 16),
		Enabled: true, Events: []string{"media.*"}, TimeoutSeconds: 10, MaxAttempts: 5}
}

// TestEveryValidationRuleRejects has one rejecting case per rule of the
// plan table, and shows that nothing is stored by a rejected request.
func TestEveryValidationRuleRejects(t *testing.T) {
	e := newEnv(t, newManualClock())
	e.svc.Targets = &TargetGuard{Resolver: fakeResolver{lookup: func(host string) ([]netip.Addr, error) {
		switch host {
		case "metadata.internal":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		case "rebind.example.com":
			return []netip.Addr{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil
	}}, OwnAddrs: func() []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("198.51.100.4"), netip.MustParseAddr("2001:db8::4")}
	}}
	if _, err := e.svc.Create(context.Background(), testActor, validInput()); err != nil {
		t.Fatalf("a valid plan was refused: %v", err)
	}
	rev := e.node.Revision()
	cases := []struct {
		name string
		edit func(*PlanInput)
		want error
	}{
		{"empty name", func(p *PlanInput) { p.Name = "" }, ErrInvalid},
		{"name of 129 characters", func(p *PlanInput) { p.Name = strings.Repeat("n", 129) }, ErrInvalid},
		{"name with surrounding spaces", func(p *PlanInput) { p.Name = " crm2 " }, ErrInvalid},
		{"name taken (any case)", func(p *PlanInput) { p.Name = "CRM" }, ErrNameTaken},
		{"description of 513 characters", func(p *PlanInput) { p.Description = strings.Repeat("d", 513) }, ErrInvalid},
		{"relative endpoint", func(p *PlanInput) { p.Endpoint = "/hooks" }, ErrInvalid},
		{"endpoint with credentials", func(p *PlanInput) { p.Endpoint = "https://user:pw@hooks.example.com/" }, ErrInvalid},
		{"endpoint with query", func(p *PlanInput) { p.Endpoint = "https://hooks.example.com/?token=1" }, ErrInvalid},
		{"endpoint with empty query", func(p *PlanInput) { p.Endpoint = "https://hooks.example.com/?" }, ErrInvalid},
		{"endpoint with fragment", func(p *PlanInput) { p.Endpoint = "https://hooks.example.com/#x" }, ErrInvalid},
		{"endpoint of another scheme", func(p *PlanInput) { p.Endpoint = "ftp://hooks.example.com/" }, ErrInvalid},
		{"http without allowHttp", func(p *PlanInput) { p.Endpoint = "http://hooks.example.com/" }, ErrInvalid},
		{"loopback endpoint", func(p *PlanInput) { p.Endpoint = "https://127.0.0.1:9000/" }, ErrTargetRefused},
		{"IPv6 loopback endpoint", func(p *PlanInput) { p.Endpoint = "https://[::1]/" }, ErrTargetRefused},
		{"link-local endpoint", func(p *PlanInput) { p.Endpoint = "https://169.254.10.1/" }, ErrTargetRefused},
		{"metadata by name", func(p *PlanInput) { p.Endpoint = "https://metadata.internal/latest" }, ErrTargetRefused},
		{"metadata outside link-local", func(p *PlanInput) { p.Endpoint = "https://100.100.100.200/" }, ErrTargetRefused},
		{"name resolving to loopback among others", func(p *PlanInput) { p.Endpoint = "https://rebind.example.com/" }, ErrTargetRefused},
		{"the node's own address", func(p *PlanInput) { p.Endpoint = "https://198.51.100.4:8080/" }, ErrTargetRefused},
		{"the node's own IPv6 address", func(p *PlanInput) { p.Endpoint = "https://[2001:db8::4]/" }, ErrTargetRefused},
		{"loopback through NAT64", func(p *PlanInput) { p.Endpoint = "https://[64:ff9b::7f00:1]/" }, ErrTargetRefused},
		{"metadata through local-use NAT64", func(p *PlanInput) { p.Endpoint = "https://[64:ff9b:1::a9fe:a9fe]/" }, ErrTargetRefused},
		{"loopback through 6to4", func(p *PlanInput) { p.Endpoint = "https://[2002:7f00:1::1]/" }, ErrTargetRefused},
		{"metadata through 6to4", func(p *PlanInput) { p.Endpoint = "https://[2002:a9fe:a9fe::]/" }, ErrTargetRefused},
		{"loopback through Teredo", func(p *PlanInput) { p.Endpoint = "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/" }, ErrTargetRefused},
		{"IPv4-compatible loopback", func(p *PlanInput) { p.Endpoint = "https://[::7f00:1]/" }, ErrTargetRefused},
		{"missing secret", func(p *PlanInput) { p.Secret = "" }, ErrInvalid},
		{"secret of 15 characters", func(p *PlanInput) { p.Secret = strings.Repeat("s", 15) }, ErrInvalid},
		{"secret of 257 characters", func(p *PlanInput) { p.Secret = strings.Repeat("s", 257) }, ErrInvalid},
		{"no events", func(p *PlanInput) { p.Events = nil }, ErrInvalid},
		{"unknown event", func(p *PlanInput) { p.Events = []string{"media.server.exploded"} }, ErrInvalid},
		{"wildcard selecting nothing", func(p *PlanInput) { p.Events = []string{"nothing.*"} }, ErrInvalid},
		{"bare star", func(p *PlanInput) { p.Events = []string{"*"} }, ErrInvalid},
		{"star inside a name", func(p *PlanInput) { p.Events = []string{"media.*.online"} }, ErrInvalid},
		{"timeout 1 s", func(p *PlanInput) { p.TimeoutSeconds = 1 }, ErrInvalid},
		{"timeout 31 s", func(p *PlanInput) { p.TimeoutSeconds = 31 }, ErrInvalid},
		{"max attempts 0", func(p *PlanInput) { p.MaxAttempts = 0 }, ErrInvalid},
		{"max attempts 11", func(p *PlanInput) { p.MaxAttempts = 11 }, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := validInput()
			in.Name = "other"
			c.edit(&in)
			_, err := e.svc.Create(context.Background(), testActor, in)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), in.Secret) && in.Secret != "" {
				t.Fatalf("the error text holds the secret: %v", err)
			}
		})
	}
	if got := e.node.Revision(); got != rev {
		t.Fatalf("rejected requests changed the store: revision %d -> %d", rev, got)
	}
}

// TestUpdateKeepsOrRotatesTheSecretAndNormalisesHooks: an empty secret on
// update keeps it, a new one rotates only that plan's; legacy hook names
// are saved in catalog form.
func TestUpdateKeepsOrRotatesTheSecretAndNormalisesHooks(t *testing.T) {
	e := newEnv(t, newManualClock())
	e.svc.Targets = &TargetGuard{Resolver: fakeResolver{lookup: func(string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil
	}}}
	ctx := context.Background()
	in := validInput()
	in.Events = []string{"engine.webhook.on_stream_changed", "engine.webhook.OnStreamChanged", "engine.webhook.on_play", "recording.*"}
	a, err := e.svc.Create(ctx, testActor, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.Events, ","); got != "engine.webhook.OnStreamChanged,engine.webhook.OnPlay,recording.*" {
		t.Fatalf("normalised events = %s", got)
	}
	other := validInput()
	other.Name = "other"
	b, err := e.svc.Create(ctx, testActor, other)
	if err != nil {
		t.Fatal(err)
	}
	open := func(p *Plan) string {
		got, _, err := e.svc.GetPlan(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		secret, err := e.keys.Open(got.SealedSecret, []byte(got.key()))
		if err != nil {
			t.Fatal(err)
		}
		return string(secret)
	}
	in.Secret, in.Description = "", "kept secret"
	if _, err := e.svc.Update(ctx, testActor, a.ID, in); err != nil {
		t.Fatal(err)
	}
	if open(a) != validInput().Secret {
		t.Fatal("an empty secret on update changed the secret")
	}
	in.Secret = "a-brand-new-secret-value"
	if _, err := e.svc.Update(ctx, testActor, a.ID, in); err != nil {
		t.Fatal(err)
	}
	if open(a) != in.Secret || open(b) != validInput().Secret {
		t.Fatal("rotation did not change exactly one plan's secret")
	}
	in.Name = "other"
	if _, err := e.svc.Update(ctx, testActor, a.ID, in); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("renaming onto another plan's name: %v", err)
	}
	if _, err := e.svc.Update(ctx, testActor, "no-such-plan", validInput()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of an unknown plan: %v", err)
	}
}

// TestLegacyEndpointMigratesOnceOnlyWithoutPlans.
func TestLegacyEndpointMigratesOnceOnlyWithoutPlans(t *testing.T) {
	ctx := context.Background()
	legacy := LegacyEndpoint{URL: "http://127.0.0.1:9/legacy", Secret: "legacy-secret-1234567"}
	e := newEnv(t, newManualClock())
	created, err := e.svc.MigrateLegacy(ctx, legacy)
	if err != nil || !created {
		t.Fatalf("first migration: %v %v", created, err)
	}
	plans, _ := e.svc.ListPlans(ctx, true)
	if len(plans) != 1 || plans[0].Name != DefaultPlanName || !plans[0].AllowHTTP || plans[0].SealedSecret == "" ||
		strings.Contains(plans[0].SealedSecret, legacy.Secret) {
		t.Fatalf("migrated plan = %+v", plans)
	}
	if _, err := e.svc.Archive(ctx, testActor, plans[0].ID); err != nil {
		t.Fatal(err)
	}
	if created, err := e.svc.MigrateLegacy(ctx, legacy); err != nil || created {
		t.Fatalf("second migration: %v %v", created, err)
	}
	// A cluster that already has a plan (even an archived one) never
	// migrates.
	e2 := newEnv(t, newManualClock())
	p := e2.plan("mine", "http://127.0.0.1:9/x", "some-secret-abcdefgh", 1, "media.*")
	e2.svc.Archive(ctx, testActor, p.ID)
	if created, err := e2.svc.MigrateLegacy(ctx, legacy); err != nil || created {
		t.Fatalf("migration beside an archived plan: %v %v", created, err)
	}
	if kv, _, _ := store.Get(ctx, e2.node, migratedKey, store.Local); kv == nil {
		t.Fatal("the stand-down was not recorded")
	}
}

func TestBackoffBounds(t *testing.T) {
	cases := []struct {
		failed     int
		u          float64
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0.5, 0, 5 * time.Second},
		{1, 0, 0, 4 * time.Second},
		{1, 0.999999, 0, 6 * time.Second},
		{2, 0.5, 0, 10 * time.Second},
		{4, 0.5, 0, 40 * time.Second},
		{7, 0.5, 0, 300 * time.Second},
		{7, 0.999999, 0, 300 * time.Second}, // capped after jitter
		{30, 0.5, 0, 300 * time.Second},
		{1, 0.5, 60 * time.Second, 60 * time.Second}, // Retry-After honoured
		{1, 0.5, time.Hour, 300 * time.Second},       // within the cap
		{3, 0.5, time.Second, 20 * time.Second},      // never sooner than the backoff
	}
	for _, c := range cases {
		got := Backoff(c.failed, c.u, c.retryAfter)
		if got.Round(time.Second) != c.want {
			t.Errorf("Backoff(%d, %v, %s) = %s, want %s", c.failed, c.u, c.retryAfter, got, c.want)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"": 0, "120": 2 * time.Minute, "-1": 0, "soon": 0, "99999": BackoffCap,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	}
	for in, want := range cases {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestSignatureVector checks Sign against a value computed by hand with
// openssl: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret
func TestSignatureVector(t *testing.T) {
	got := Sign([]byte("secret"), 1700000000, []byte(`{"a":1}`))
	const want = "v1=49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	now := time.Unix(1700000000, 0)
	if err := Verify([]byte("secret"), "1700000000", got, []byte(`{"a":1}`), now, 300*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := Verify([]byte("secret"), "1700000000", got, []byte(`{"a":2}`), now, 300*time.Second); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered body: %v", err)
	}
	if err := Verify([]byte("secret"), "1700000000", got, []byte(`{"a":1}`), now.Add(301*time.Second), 300*time.Second); !errors.Is(err, ErrStale) {
		t.Fatalf("stale timestamp: %v", err)
	}
}
