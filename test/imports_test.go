package test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/svcplatform/svc/"

// TestImportDirection enforces DESIGN.md section 3: mediaengine imports
// nothing from controlplane or agent; agent never imports controlplane;
// shared imports none of the roles. Transitive dependencies count.
func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := map[string][]string{
		module + "mediaengine": {module + "controlplane", module + "agent"},
		module + "agent":       {module + "controlplane"},
		module + "shared":      {module + "controlplane", module + "agent", module + "mediaengine"},
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		for root, bans := range forbidden {
			if pkg != root && !strings.HasPrefix(pkg, root+"/") {
				continue
			}
			checked++
			for _, d := range deps {
				for _, ban := range bans {
					if d == ban || strings.HasPrefix(d, ban+"/") {
						t.Errorf("%s depends on %s: roles talk only through shared wire types", pkg, d)
					}
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("only %d packages checked; the layout changed?", checked)
	}
}

// TestDomainsQueryThroughTheStore enforces the store's promise (see
// controlplane/store): domain packages find records through
// controlplane/store/query and never see the embedded SQLite backend, so
// SQL text lives only in store/sqlitefsm and another backend can replace
// it. The composition root (server) opens the backend; storeaudit is the
// store's own administration (schema and migration audits) and reads the
// backend's reports, and system reports the backend's schema version;
// neither writes SQL.
func TestDomainsQueryThroughTheStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"controlplane/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	backend := module + "controlplane/store/sqlitefsm"
	mayOpenBackend := map[string]bool{module + "controlplane/server": true, module + "controlplane/system": true, module + "controlplane/storeaudit": true}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if strings.HasPrefix(pkg, module+"controlplane/store/") {
			continue
		}
		checked++
		for _, imp := range imports {
			switch {
			case imp == "database/sql":
				t.Errorf("%s imports database/sql: queries go through controlplane/store/query", pkg)
			case imp == backend && !mayOpenBackend[pkg]:
				t.Errorf("%s imports %s: domain packages depend on controlplane/store and store/query only", pkg, backend)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d packages checked; the layout changed?", checked)
	}
}

// wireProtocols are the media engine's protocol packages: codecs, wire
// formats, parsers and clients of one protocol each. They turn bytes into
// media.Frames and back and know nothing of streams, readers or the hub;
// the servers and outputs (flv, fmp4, hls, httpmedia, proxy, recorder,
// rtc) and the engine's assembly join them to the hub. The RTSP server
// (rtsp/rtspserver) is listed too: it reaches streams only through the
// Handler the engine gives it.
var wireProtocols = []string{"codec", "media", "rtpcodec", "rtsp", "rtsp/rtspclient", "rtsp/rtspserver", "ps", "gbrtp", "filesource", "hooks"}

// TestProtocolPackagesNeverImportTheHub keeps the engine's protocol
// packages testable and reusable on their own (transitive imports count).
func TestProtocolPackagesNeverImportTheHub(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"mediaengine/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	hub := module + "mediaengine/hub"
	checked := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		for _, p := range wireProtocols {
			root := module + "mediaengine/" + p
			if pkg != root && !strings.HasPrefix(pkg, root+"/") {
				continue
			}
			checked[p] = true
			for _, d := range deps {
				if d == hub {
					t.Errorf("%s depends on %s: a protocol package hands frames to its caller and never sees the hub", pkg, hub)
				}
			}
		}
	}
	for _, p := range wireProtocols {
		if !checked[p] {
			t.Errorf("protocol package mediaengine/%s not found; update wireProtocols", p)
		}
	}
}

// TestRTSPWireImportsNoEnd keeps mediaengine/rtsp the wire layer both RTSP
// ends build on: it never depends on the client (rtspclient) or the
// server (rtspserver), so either can change, or a third end (a proxy, a
// recorder) can be added, without touching the codec. The client and the
// server do not depend on each other either.
func TestRTSPWireImportsNoEnd(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"mediaengine/rtsp/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	wire, client, server := module+"mediaengine/rtsp", module+"mediaengine/rtsp/rtspclient", module+"mediaengine/rtsp/rtspserver"
	forbidden := map[string][]string{wire: {client, server}, client: {server}, server: {client}}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		bans, ok := forbidden[pkg]
		if !ok {
			continue
		}
		checked++
		for _, d := range deps {
			for _, ban := range bans {
				if d == ban || strings.HasPrefix(d, ban+"/") {
					t.Errorf("%s depends on %s: the RTSP ends share only the wire package", pkg, d)
				}
			}
		}
	}
	if checked != len(forbidden) {
		t.Fatalf("checked %d of the %d RTSP packages; the layout changed?", checked, len(forbidden))
	}
}
