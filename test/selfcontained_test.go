package test

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// pathToken is a run of characters that can make up a file path.
var pathToken = regexp.MustCompile(`[A-Za-z0-9_.~/\-]+`)

// workspaceRoots are absolute directories that hold checkouts and their
// neighbours on a developer's machine, never anything a clone of this
// repository can count on.
var workspaceRoots = []string{"/work/", "/home/", "/root/", "/Users/"}

// scratchDirs are shared scratch directories: a checkout placed in one
// does not make the rest of it part of the developer's machine.
var scratchDirs = []string{"/tmp", "/var/tmp"}

// outsideRef is one reference from a tracked file to a path outside the
// repository.
type outsideRef struct {
	line int
	ref  string
	why  string
}

// outsideRefs finds the paths a file's text refers to that lie outside the
// repository: a relative path that climbs out of it from the file's
// directory; in documentation, a relative path to something the
// repository does not hold (prose like "../shared/DESIGN.md" means a
// neighbour of the checkout); and absolute paths under a workspace
// directory or the checkout's parent. file is slash-separated and relative
// to the repository root; exists reports whether a cleaned repository path
// is tracked (a file or a directory holding one); parent is the absolute
// directory holding the checkout.
func outsideRefs(file string, text []byte, exists func(string) bool, parent string) []outsideRef {
	var out []outsideRef
	dir := path.Dir(file)
	doc := strings.HasSuffix(file, ".md")
	for i, line := range bytes.Split(text, []byte("\n")) {
		for _, loc := range pathToken.FindAllIndex(line, -1) {
			tok := string(line[loc[0]:loc[1]])
			// A token inside a URL is the URL's business.
			if loc[0] >= 3 && string(line[loc[0]-3:loc[0]]) == "://" {
				continue
			}
			if strings.HasPrefix(tok, "/") {
				roots := workspaceRoots
				// The checkout's neighbours are outside it, unless the
				// checkout sits in a shared scratch directory (a clone in
				// /tmp), whose other files the README's commands may use.
				if p := strings.TrimSuffix(parent, "/"); p != "" && !slices.Contains(scratchDirs, p) {
					roots = append(roots, p+"/")
				}
				for _, root := range roots {
					if root != "/" && strings.HasPrefix(tok+"/", root) {
						out = append(out, outsideRef{i + 1, tok, "an absolute path on the developer's machine"})
						break
					}
				}
				continue
			}
			if !strings.Contains(tok, "../") {
				continue
			}
			target := path.Join(dir, tok)
			switch {
			case target == ".." || strings.HasPrefix(target, "../"):
				out = append(out, outsideRef{i + 1, tok, "climbs out of the repository"})
			case doc && !exists(strings.TrimSuffix(target, "/")):
				out = append(out, outsideRef{i + 1, tok, "names nothing the repository holds"})
			}
		}
	}
	return out
}

// TestOutsideRefsFindsThem keeps the scanner honest about what it flags.
func TestOutsideRefsFindsThem(t *testing.T) {
	exists := func(p string) bool { return p == "api/openapi.yaml" || p == "docs" }
	cases := []struct {
		file, text string
		want       int
	}{
		{"controlplane/permission/catalog_test.go", `os.ReadFile("../../../shared/spec/contract-a.md")`, 1},
		{"api/contract/doc.go", `//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../openapi.yaml`, 0},
		{"docs/architecture.md", "The decided shape is in `../shared/DESIGN.md` (outside this repository);", 1},
		{"docs/architecture.md", "see [the contract](../api/openapi.yaml)", 0},
		{"controlplane/events/events_test.go", `{"on_play", "../etc", ` + "`{}`" + `},`, 0},
		{"README.md", "cat /work/shared/spec/contract-b.md", 1},
		{"README.md", "data in /home/dev/svc-data", 1},
		{"README.md", "echo secret > /tmp/engine-secret; ls /var/lib/svc", 0},
		{"README.md", "curl http://example.com/../x", 0},
		{"scripts/x.sh", "cp /srv/checkouts/other/file .", 1},
	}
	for _, c := range cases {
		if got := outsideRefs(c.file, []byte(c.text), exists, "/srv/checkouts"); len(got) != c.want {
			t.Errorf("%s: %q: found %v, want %d", c.file, c.text, got, c.want)
		}
	}
	// A clone in /tmp: the README's scratch files there are not outside refs.
	if got := outsideRefs("README.md", []byte("curl -c /tmp/svc-jar"), exists, "/tmp"); len(got) != 0 {
		t.Errorf("a checkout in /tmp flags /tmp/svc-jar: %v", got)
	}
}

// TestNoTrackedFileRefersOutsideTheRepository keeps the repository
// self-contained: nothing it tracks reads or points at a file beside the
// checkout (DESIGN: the documents it was written from are reading
// material, not a dependency). Comparisons with those documents live in
// `make contract-docs-check`.
func TestNoTrackedFileRefersOutsideTheRepository(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(self))
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files (the test needs git and a checkout): %v", err)
	}
	files := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	tracked := map[string]bool{}
	for _, f := range files {
		for p := f; p != "."; p = path.Dir(p) {
			tracked[p] = true
		}
	}
	exists := func(p string) bool { return tracked[p] }
	scanned := 0
	for _, f := range files {
		if f == "test/selfcontained_test.go" {
			continue // this file: its samples are what the scanner must flag
		}
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			// Deleted in the work tree but not yet in the index.
			continue
		}
		if bytes.IndexByte(text[:min(len(text), 8000)], 0) >= 0 {
			continue // binary
		}
		scanned++
		for _, r := range outsideRefs(f, text, exists, filepath.Dir(root)) {
			t.Errorf("%s:%d refers to %q, which %s", f, r.line, r.ref, r.why)
		}
	}
	if scanned < 100 {
		t.Fatalf("only %d tracked text files found under %s", scanned, root)
	}
}
