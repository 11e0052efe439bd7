// Package apitoken owns API tokens: their wire format (svc_pat_ + 43 base62
// characters of 256 random bits + a 6-character base62 CRC32, so secret
// scanners recognise them and typos are rejected before any lookup), the
// stored record (only a SHA-256 digest of the token), and resolving a
// presented token to the identity and permissions it carries.
package apitoken

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"math/big"
	"strings"

	"github.com/svcplatform/svc/controlplane/fault"
)

// Prefix marks every API token.
const Prefix = "svc_pat_"

const (
	base62     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	bodyLen    = 43 // ceil(256 / log2(62))
	checksumLn = 6  // ceil(32 / log2(62))
)

// ErrMalformed means the string is not an API token (wrong prefix, length,
// alphabet or checksum).
var ErrMalformed = fault.New(fault.Unauthenticated, "api_token_required", "apitoken: malformed token")

func encode62(n *big.Int, width int) string {
	out := make([]byte, width)
	b := new(big.Int).Set(n)
	base := big.NewInt(62)
	mod := new(big.Int)
	for i := width - 1; i >= 0; i-- {
		b.DivMod(b, base, mod)
		out[i] = base62[mod.Int64()]
	}
	return string(out)
}

func checksum(body string) string {
	return encode62(new(big.Int).SetUint64(uint64(crc32.ChecksumIEEE([]byte(Prefix+body)))), checksumLn)
}

// New returns a fresh random token.
func New() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	body := encode62(new(big.Int).SetBytes(raw), bodyLen)
	return Prefix + body + checksum(body), nil
}

// Check validates a token's shape and checksum without any lookup.
func Check(token string) error {
	if !strings.HasPrefix(token, Prefix) || len(token) != len(Prefix)+bodyLen+checksumLn {
		return ErrMalformed
	}
	rest := token[len(Prefix):]
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return ErrMalformed
		}
	}
	if checksum(rest[:bodyLen]) != rest[bodyLen:] {
		return ErrMalformed
	}
	return nil
}

// Digest is the stored form of a token: hex SHA-256.
func Digest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
