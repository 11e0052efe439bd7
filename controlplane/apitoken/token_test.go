package apitoken

import (
	"errors"
	"strings"
	"testing"
)

func TestFormatAndChecksum(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		tok, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok, Prefix) || len(tok) != len(Prefix)+bodyLen+checksumLn || seen[tok] {
			t.Fatalf("bad token %q", tok)
		}
		seen[tok] = true
		if err := Check(tok); err != nil {
			t.Fatalf("fresh token rejected: %v", err)
		}
		// Any single-character typo in the body is caught by the checksum.
		pos := len(Prefix) + i%bodyLen
		c := tok[pos]
		repl := byte('a')
		if c == 'a' {
			repl = 'b'
		}
		typo := tok[:pos] + string(repl) + tok[pos+1:]
		if err := Check(typo); !errors.Is(err, ErrMalformed) {
			t.Fatalf("typo %q accepted", typo)
		}
	}
	for _, bad := range []string{"", "svc_pat_", "ghp_abcdef", "svc_pat_" + strings.Repeat("!", bodyLen+checksumLn)} {
		if Check(bad) == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
