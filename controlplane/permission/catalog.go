// Package permission is the catalogue of permission points the contract
// names (contract A, "Authentication", rule 6), grouped for people composing
// roles, and the capability categories a business backend checks before it
// integrates (contract A rule 7, "least-permission guidance by use").
package permission

import "sort"

// Super holds every permission; Auth is held by any authenticated identity.
const (
	Super = "*"
	Auth  = "auth"
)

// DevicePseudo are the x-svc-permission values contract B gives meeting
// room device operations: not permissions but the credential the operation
// takes (a participant's X-Svc-RTC-Token, or "none" and "token" where a
// participant has only an access ticket or token yet). Such an operation is
// marked by x-svc-credential, which the HTTP layer enforces; no API token
// or console session ever reaches it.
var DevicePseudo = []string{"X-Svc-RTC-Token", "token", "none"}

// Point is one permission.
type Point struct {
	Name, Category, Description string
}

// Points lists every known permission. Append only: a name, once issued to
// tokens and roles, keeps its meaning.
var Points = []Point{
	{"system.view", "system", "read system information, health, audits and webhooks"},
	{"system.config.view", "system", "read configuration"},
	{"system.config.manage", "system", "change configuration and webhook delivery plans"},
	{"system.config.raw.manage", "system", "read and write raw configuration files"},
	{"system.logs.view", "system", "read logs, the event outbox and the engine webhook inbox"},
	{"system.logs.manage", "system", "change log levels and overrides"},
	{"system.logs.download", "system", "download log files"},
	{"system.host.manage", "system", "apply host tuning through node agents"},
	{"system.tasks.view", "system", "list built-in background tasks"},
	{"system.tasks.execute", "system", "run built-in tasks"},
	{"system.lifecycle.view", "system", "read node-agent and lifecycle state"},
	{"system.lifecycle.manage", "system", "enroll agents and run lifecycle operations"},
	{"system.upgrade.view", "system", "read upgrade records"},
	{"system.upgrade.manage", "system", "upload and start upgrades"},
	{"nodes.view", "nodes", "read cluster, nodes, media servers and node commands"},
	{"nodes.manage", "nodes", "create node commands, lease ports, manage media servers"},
	{"channels.view", "channels", "list and read channels"},
	{"channels.manage", "channels", "create, change, start and stop channels"},
	{"streams.view", "streams", "read streams, sessions and players"},
	{"streams.manage", "streams", "start and stop pulls, run smoke tests"},
	{"streams.play", "streams", "obtain live playback URLs and leases"},
	{"devices.view", "devices", "read GB28181 and ONVIF devices"},
	{"devices.manage", "devices", "add, bind and configure devices"},
	{"devices.control", "devices", "PTZ, invites and native device calls"},
	{"devices.talk", "devices", "intercom audio"},
	{"recordings.view", "recordings", "list recordings, plans and cut/merge tasks"},
	{"recordings.manage", "recordings", "start and stop recording, plans, cut/merge, restore"},
	{"recordings.play", "recordings", "play recordings and search them"},
	{"recordings.download", "recordings", "download recordings"},
	{"recordings.delete", "recordings", "soft and hard delete recordings"},
	{"security.tokens.view", "security", "list API tokens"},
	{"security.tokens.manage", "security", "create, change, reveal, rotate and revoke API tokens"},
	{"security.audit.view", "security", "read the security audit log"},
	{"security.roles.view", "security", "list roles"},
	{"security.roles.manage", "security", "create, change and delete roles"},
	{"security.rtsp.view", "security", "list RTSP credentials"},
	{"security.rtsp.manage", "security", "change RTSP credentials"},
	{"security.users.view", "security", "list console users"},
	{"security.users.manage", "security", "create, change and delete users, reset passwords"},
	{"display-wall.view", "display-wall", "read display wall programs"},
	{"display-wall.manage", "display-wall", "change and run display wall programs"},
	{"rtc.manage", "rtc", "create meeting rooms and issue join tickets"},
	{"rtc.recordings.view", "rtc", "list meeting recordings"},
	{"rtc.recordings.play", "rtc", "play meeting recordings"},
	{"rtc.recordings.download", "rtc", "download meeting recordings"},
}

var known = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range Points {
		m[p.Name] = true
	}
	return m
}()

// Known reports whether name is a grantable permission (or `*`).
func Known(name string) bool { return name == Super || known[name] }

// Grants reports whether a holder of have holds want.
func Grants(have []string, want string) bool {
	if want == Auth {
		return true
	}
	for _, h := range have {
		if h == Super || h == want {
			return true
		}
	}
	return false
}

// Within reports whether every permission in want is held through have, so
// nobody can hand out more than they hold; it returns the first one missing.
func Within(have, want []string) (string, bool) {
	for _, w := range want {
		if w == Super {
			if !Grants(have, Super) || !contains(have, Super) {
				return w, false
			}
			continue
		}
		if !Grants(have, w) {
			return w, false
		}
	}
	return "", true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Category is a capability a business backend can check for.
type Category struct {
	Name, Description string
	Required          []string
}

// Categories follow the contract's least-permission guidance.
var Categories = []Category{
	{"channel-sync", "synchronise channels and their status", []string{"channels.view", "streams.view"}},
	{"live-playback", "obtain live playback URLs and leases", []string{"channels.view", "streams.view", "streams.play"}},
	{"channel-control", "start and stop ordinary channels", []string{"channels.view", "streams.view", "channels.manage"}},
	{"recording-playback", "query and play recordings", []string{"recordings.view", "recordings.play"}},
	{"recording-download", "download recordings", []string{"recordings.view", "recordings.play", "recordings.download"}},
	{"recording-editing", "cut/merge and restore recordings", []string{"recordings.view", "recordings.play", "recordings.manage"}},
	{"recording-deletion", "delete recordings and cut results", []string{"recordings.view", "recordings.delete"}},
	{"gb28181-control", "GB28181 live and PTZ", []string{"devices.view", "devices.control"}},
	{"rtc-rooms", "create meeting rooms and issue join tickets", []string{"rtc.manage"}},
	{"webhooks-read", "read webhook delivery plans", []string{"system.view"}},
	{"webhooks-manage", "manage webhook delivery plans", []string{"system.view", "system.config.manage"}},
}

// Normalize sorts and de-duplicates a permission list.
func Normalize(list []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, p := range list {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// Intersect is what a holder of both a and b may do: a token's permissions
// capped by its owner's current ones.
func Intersect(a, b []string) []string {
	switch {
	case contains(a, Super):
		return Normalize(b)
	case contains(b, Super):
		return Normalize(a)
	}
	var out []string
	for _, p := range a {
		if contains(b, p) {
			out = append(out, p)
		}
	}
	return Normalize(out)
}
