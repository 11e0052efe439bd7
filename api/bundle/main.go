// Command bundle writes api/openapi.yaml, the published single-file
// contract, from its sources in api/openapi/: one file per contract tag
// holding that tag's paths and the schemas only it uses, a head (info,
// tags, security) and the shared components. The sources are edited; the
// bundle is generated (make generate) and checked (make test runs
// bundle -check, which fails when the bundle is stale).
//
// The sources are plain YAML fragments and the bundle is their text joined
// in order, re-indented under paths: and components.schemas:, so a line of
// a source is a line of the bundle and a diff reads the same in both.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Source files: head.yaml, components.yaml and one <tag>.yaml per tag.
const (
	headFile       = "head.yaml"
	componentsFile = "components.yaml"
)

func main() {
	dir := flag.String("dir", "api/openapi", "directory of the contract's sources")
	out := flag.String("out", "api/openapi.yaml", "bundle to write")
	check := flag.Bool("check", false, "fail when the bundle differs from what the sources give, instead of writing it")
	flag.Parse()
	b, err := bundle(*dir)
	if err == nil {
		err = finish(b, *out, *check)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func finish(b []byte, out string, check bool) error {
	if !check {
		return os.WriteFile(out, b, 0o644)
	}
	have, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	if !bytes.Equal(have, b) {
		return fmt.Errorf("%s is stale: edit the sources in api/openapi/ and run make generate", out)
	}
	return nil
}

// module is one source: its paths and schemas sections, each the text of
// the entries (indented by 2 as in the source).
type module struct {
	name           string
	paths, schemas string
	components     string
}

// bundle joins the sources: the head, every module's paths (in the order
// the head's tags list them), the shared components, then every module's
// schemas and the shared ones.
func bundle(dir string) ([]byte, error) {
	head, err := os.ReadFile(filepath.Join(dir, headFile))
	if err != nil {
		return nil, err
	}
	order := tagOrder(string(head))
	comp, err := read(filepath.Join(dir, componentsFile))
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var mods []module
	for _, f := range files {
		base := filepath.Base(f)
		if base == headFile || base == componentsFile {
			continue
		}
		name := strings.TrimSuffix(base, ".yaml")
		if _, ok := order[name]; !ok {
			return nil, fmt.Errorf("%s: no tag %q in %s", base, name, headFile)
		}
		m, err := read(f)
		if err != nil {
			return nil, err
		}
		m.name = name
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return order[mods[i].name] < order[mods[j].name] })
	var b strings.Builder
	b.Write(head)
	b.WriteString("paths:\n")
	for _, m := range mods {
		b.WriteString(m.paths)
	}
	b.WriteString("components:\n")
	b.WriteString(comp.components)
	b.WriteString("  schemas:\n")
	for _, m := range mods {
		b.WriteString(indent(m.schemas))
	}
	b.WriteString(indent(comp.schemas))
	return []byte(b.String()), nil
}

// tagOrder numbers the tags in the order the head lists them.
func tagOrder(head string) map[string]int {
	order := map[string]int{}
	for _, line := range strings.Split(head, "\n") {
		if name, ok := strings.CutPrefix(line, "  - name: "); ok {
			order[strings.TrimSpace(name)] = len(order)
		}
	}
	return order
}

// read splits a source into its top-level sections: paths, schemas and
// (in components.yaml) components; comment lines before the first section
// are the file's own notes and are left out.
func read(path string) (module, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return module{}, err
	}
	var m module
	var cur *string
	for i, line := range strings.SplitAfter(string(raw), "\n") {
		switch strings.TrimRight(line, "\r\n") {
		case "paths:":
			cur = &m.paths
			continue
		case "schemas:":
			cur = &m.schemas
			continue
		case "components:":
			cur = &m.components
			continue
		}
		if line == "" {
			continue
		}
		if cur == nil {
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			return module{}, fmt.Errorf("%s:%d: text before the first section (paths:, schemas: or components:)", path, i+1)
		}
		if !strings.HasPrefix(line, " ") && strings.TrimSpace(line) != "" {
			return module{}, fmt.Errorf("%s:%d: unknown top-level section %q", path, i+1, strings.TrimSpace(line))
		}
		*cur += line
	}
	return m, nil
}

// indent moves a section's entries two columns right, under components:.
func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.String()
}
