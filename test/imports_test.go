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
// it. The composition root (server) opens the backend; system is the
// store's own administration (schema and migration audits) and reads the
// backend's reports, but writes no SQL either.
func TestDomainsQueryThroughTheStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"controlplane/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	backend := module + "controlplane/store/sqlitefsm"
	mayOpenBackend := map[string]bool{module + "controlplane/server": true, module + "controlplane/system": true}
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
