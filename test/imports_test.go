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
