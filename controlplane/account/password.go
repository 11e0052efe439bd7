package account

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/svcplatform/svc/controlplane/fault"
	"golang.org/x/crypto/argon2"
)

// Argon2id parameters: OWASP's recommended minimum (19 MiB, 2 passes, one
// lane), encoded with every hash so they can be raised later without
// invalidating stored passwords.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
)

// ErrWeakPassword is a password the policy refuses; the message says why.
var ErrWeakPassword = fault.New(fault.Invalid, "invalid_body", "password does not meet the policy")

// commonPasswords are refused outright (NIST SP 800-63B asks for a
// blocklist rather than composition rules).
var commonPasswords = map[string]bool{
	"123456789012": true, "password1234": true, "passwordpassword": true, "qwertyuiop12": true,
	"administrator": true, "letmein12345": true, "welcome12345": true, "changeme1234": true,
	"iloveyou1234": true, "adminadmin12": true, "000000000000": true, "111111111111": true,
	"qwerty123456": true, "1q2w3e4r5t6y": true, "abc123456789": true, "password123!": true,
}

// CheckPassword applies the policy: 12 to 256 characters, not the user
// name, not one repeated character, not a well-known password.
func CheckPassword(username, password string) error {
	n := utf8.RuneCountInString(password)
	switch {
	case n < 12:
		return fmt.Errorf("%w: use at least 12 characters (%d given)", ErrWeakPassword, n)
	case n > 256:
		return fmt.Errorf("%w: use at most 256 characters", ErrWeakPassword)
	case strings.EqualFold(password, username) || strings.Contains(strings.ToLower(password), strings.ToLower(username)) && len(username) >= 4:
		return fmt.Errorf("%w: it must not contain the user name", ErrWeakPassword)
	case strings.Count(password, password[:1]) == len(password):
		return fmt.Errorf("%w: it must not be one repeated character", ErrWeakPassword)
	case commonPasswords[strings.ToLower(password)]:
		return fmt.Errorf("%w: it is a well-known password", ErrWeakPassword)
	}
	return nil
}

// HashPassword returns the PHC-encoded argon2id hash of password.
func HashPassword(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// VerifyPassword checks password against an encoded hash in constant time.
func VerifyPassword(encoded, password string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var mem, iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil || mem > 1<<20 || iters > 10 || threads == 0 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, iters, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}
