package permission

import (
	"os"
	"strings"
	"testing"
)

func TestWithin(t *testing.T) {
	cases := []struct {
		have, want []string
		ok         bool
	}{
		{[]string{"*"}, []string{"channels.view", "*"}, true},
		{[]string{"channels.view"}, []string{"channels.view"}, true},
		{[]string{"channels.view"}, []string{"channels.view", "streams.play"}, false},
		{[]string{"channels.view"}, []string{"*"}, false},
		{[]string{"channels.view", "streams.view"}, nil, true},
	}
	for _, tc := range cases {
		if _, ok := Within(tc.have, tc.want); ok != tc.ok {
			t.Errorf("Within(%v, %v) = %v", tc.have, tc.want, ok)
		}
	}
}

// TestCatalogueMatchesTheContract keeps the catalogue equal to the list in
// contract A's Authentication rule 6.
func TestCatalogueMatchesTheContract(t *testing.T) {
	doc, err := os.ReadFile("../../../shared/spec/contract-a.md")
	if err != nil {
		t.Fatalf("the contract documents must sit beside the checkout (../shared/spec): %v", err)
	}
	text := string(doc)
	i := strings.Index(text, "Known permission names: ")
	line := text[i+len("Known permission names: "):]
	line = line[:strings.Index(line, "\n")]
	var names []string
	for _, n := range strings.Split(strings.TrimSuffix(line, "."), ",") {
		names = append(names, strings.TrimSpace(n))
	}
	if len(names) != len(Points) {
		t.Fatalf("contract names %d permissions, catalogue has %d", len(names), len(Points))
	}
	for _, n := range names {
		if !Known(n) {
			t.Errorf("contract permission %q missing from the catalogue", n)
		}
	}
}
