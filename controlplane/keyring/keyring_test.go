package keyring

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreateLoadSealOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.key")
	k, err := LoadOrCreate(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o", fi.Mode().Perm())
	}
	again, err := LoadOrCreate(path, false)
	if err != nil || string(again.LinkKeys()[0]) != string(k.LinkKeys()[0]) {
		t.Fatalf("reload: %v", err)
	}
	sealed, err := k.Seal([]byte("s3cret"), []byte("/a"))
	if err != nil || strings.Contains(sealed, "s3cret") {
		t.Fatalf("seal: %q %v", sealed, err)
	}
	if pt, err := again.Open(sealed, []byte("/a")); err != nil || string(pt) != "s3cret" {
		t.Fatalf("open: %q %v", pt, err)
	}
	if _, err := again.Open(sealed, []byte("/b")); !errors.Is(err, ErrDecrypt) {
		t.Fatal("ciphertext opened under another context")
	}
	if _, err := again.Open(sealed[:len(sealed)-2]+"AA", []byte("/a")); !errors.Is(err, ErrDecrypt) {
		t.Fatal("tampered ciphertext opened")
	}
	os.Chmod(path, 0o644)
	if _, err := LoadOrCreate(path, false); err == nil {
		t.Fatal("world-readable key file accepted")
	}
	if _, err := LoadOrCreate(filepath.Join(t.TempDir(), "missing"), false); err == nil {
		t.Fatal("missing key file accepted without create")
	}
}

func TestParseRejectsBadFiles(t *testing.T) {
	for name, body := range map[string]string{
		"not json":        "{",
		"bad version":     `{"version":2,"primary":"a","keys":[]}`,
		"short secret":    `{"version":1,"primary":"a","keys":[{"id":"a","secret":"AAAA"}]}`,
		"missing primary": `{"version":1,"primary":"b","keys":[{"id":"a","secret":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}`,
		"unknown field":   `{"version":1,"primary":"a","extra":1,"keys":[]}`,
	} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
