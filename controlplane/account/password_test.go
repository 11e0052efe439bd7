package account

import (
	"errors"
	"strings"
	"testing"
)

func TestPasswordPolicy(t *testing.T) {
	cases := map[string]string{
		"short":    "Sh0rt!",
		"username": "alice-is-great-2026",
		"repeated": "aaaaaaaaaaaaaaa",
		"common":   "Password1234",
		"too long": strings.Repeat("xY3", 90),
	}
	for name, pw := range cases {
		if err := CheckPassword("alice", pw); !errors.Is(err, ErrWeakPassword) {
			t.Errorf("%s: %q accepted", name, pw)
		}
	}
	if err := CheckPassword("alice", "correct horse battery staple"); err != nil {
		t.Fatalf("good passphrase refused: %v", err)
	}
}

func TestHashAndVerify(t *testing.T) {
	h, err := HashPassword("correct horse battery staple")
	if err != nil || !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q %v", h, err)
	}
	h2, _ := HashPassword("correct horse battery staple")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	if !VerifyPassword(h, "correct horse battery staple") || VerifyPassword(h, "correct horse battery stapler") {
		t.Fatal("verify wrong")
	}
	for _, bad := range []string{"", "$argon2id$", "$argon2i$v=19$m=1,t=1,p=1$AA$AA", "$argon2id$v=19$m=99999999,t=1,p=1$AA$AA"} {
		if VerifyPassword(bad, "x") {
			t.Fatalf("malformed hash %q verified", bad)
		}
	}
}
