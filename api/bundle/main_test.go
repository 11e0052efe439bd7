package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestBundleIsFresh: the published contract is exactly what its sources
// give; edit api/openapi/ and run make generate.
func TestBundleIsFresh(t *testing.T) {
	b, err := bundle("../openapi")
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b) {
		t.Fatal("api/openapi.yaml is stale: run make generate")
	}
}

// TestEverySourceIsYAMLOfItsTag: each source parses on its own, and a
// tag's file holds only operations of that tag.
func TestEverySourceIsYAMLOfItsTag(t *testing.T) {
	files, err := filepath.Glob("../openapi/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("sources %v: %v", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Paths map[string]map[string]struct {
				Tags []string `yaml:"tags"`
			} `yaml:"paths"`
		}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tag := strings.TrimSuffix(filepath.Base(f), ".yaml")
		for path, ops := range doc.Paths {
			for method, op := range ops {
				if len(op.Tags) == 0 || op.Tags[0] != tag {
					t.Errorf("%s: %s %s is tagged %v", f, method, path, op.Tags)
				}
			}
		}
	}
}

// A source with text outside its sections, or a tag the head does not
// declare, is refused.
func TestBadSourcesAreRefused(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"undeclared tag": {"head.yaml": "tags:\n  - name: a\n", "components.yaml": "components:\n", "b.yaml": "paths:\n"},
		"stray text":     {"head.yaml": "tags:\n  - name: a\n", "components.yaml": "components:\n", "a.yaml": "oops: 1\npaths:\n"},
	} {
		dir := t.TempDir()
		for f, body := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := bundle(dir); err == nil {
			t.Errorf("%s: bundled", name)
		}
	}
}
