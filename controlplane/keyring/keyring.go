// Package keyring holds the cluster keys every control node reads from the
// same key file: they authenticate the internal link between control nodes
// and encrypt secrets at rest. Keys carry ids so a new primary key can be
// added and old ciphertexts still opened.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
)

// File is the on-disk form of the key file.
type File struct {
	Version int    `json:"version"`
	Primary string `json:"primary"`
	Keys    []Key  `json:"keys"`
}

// Key is one 32-byte cluster key.
type Key struct {
	ID        string `json:"id"`
	Secret    string `json:"secret"` // base64 of 32 bytes
	CreatedAt string `json:"createdAt"`
}

// Keyring is the loaded, checked key file.
type Keyring struct {
	primary string
	keys    map[string][]byte
	order   []string
}

var (
	// ErrDecrypt means a ciphertext is damaged or was sealed with a key this
	// ring does not have.
	ErrDecrypt = fault.New(fault.Internal, "internal", "keyring: cannot decrypt")
	idRe       = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
)

// LoadOrCreate reads the key file, creating it with one fresh key (mode
// 0600) when it does not exist and create is true.
func LoadOrCreate(path string, create bool) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		if err := writeNew(path); err != nil {
			return nil, err
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster key file: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("cluster key file %s is readable by group or others (mode %o); chmod 600 it", path, fi.Mode().Perm())
	}
	return Parse(data)
}

func writeNew(path string) error {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	now := time.Now().UTC()
	id := "k" + now.Format("20060102")
	f := File{Version: 1, Primary: id, Keys: []Key{{ID: id, Secret: base64.StdEncoding.EncodeToString(secret), CreatedAt: now.Format(time.RFC3339)}}}
	data, _ := json.MarshalIndent(f, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := fh.Write(append(data, '\n')); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// Parse checks and loads a key file's contents.
func Parse(data []byte) (*Keyring, error) {
	var f File
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("cluster key file: %w", err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("cluster key file: unsupported version %d", f.Version)
	}
	k := &Keyring{primary: f.Primary, keys: map[string][]byte{}}
	for _, key := range f.Keys {
		if !idRe.MatchString(key.ID) {
			return nil, fmt.Errorf("cluster key file: bad key id %q", key.ID)
		}
		secret, err := base64.StdEncoding.DecodeString(key.Secret)
		if err != nil || len(secret) != 32 {
			return nil, fmt.Errorf("cluster key file: key %s is not 32 base64-encoded bytes", key.ID)
		}
		if _, dup := k.keys[key.ID]; dup {
			return nil, fmt.Errorf("cluster key file: key id %s appears twice", key.ID)
		}
		k.keys[key.ID] = secret
		k.order = append(k.order, key.ID)
	}
	if _, ok := k.keys[f.Primary]; !ok {
		return nil, fmt.Errorf("cluster key file: primary key %q is not in the file", f.Primary)
	}
	return k, nil
}

// PrimaryID is the id of the key new ciphertexts use.
func (k *Keyring) PrimaryID() string { return k.primary }

// derive returns a purpose-specific subkey so one cluster key never serves
// two algorithms directly.
func derive(secret []byte, purpose string) []byte {
	out, err := hkdf.Key(sha256.New, secret, nil, "svc "+purpose, 32)
	if err != nil {
		panic(err) // only fails for impossible lengths
	}
	return out
}

// LinkKeys are the internal-link authentication keys, primary first.
func (k *Keyring) LinkKeys() [][]byte { return k.SubKeys("internal-link") }

// SubKeys derives a key for one purpose (a MAC over console access tokens,
// say) from every key of the ring, primary first: new values are made with
// the first and values made before a rotation still verify with the rest.
func (k *Keyring) SubKeys(purpose string) [][]byte {
	out := [][]byte{derive(k.keys[k.primary], purpose)}
	for _, id := range k.order {
		if id != k.primary {
			out = append(out, derive(k.keys[id], purpose))
		}
	}
	return out
}

// Seal encrypts plaintext with AES-256-GCM under the primary key. The
// result names the key id; aad binds it to its context (for example the
// record key), so a ciphertext moved elsewhere fails to open.
func (k *Keyring) Seal(plaintext, aad []byte) (string, error) {
	gcm, err := k.aead(k.primary)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	ct := gcm.Seal(nonce, nonce, plaintext, aad)
	return "v1:" + k.primary + ":" + base64.RawStdEncoding.EncodeToString(ct), nil
}

// Open decrypts what Seal produced with any key of the ring.
func (k *Keyring) Open(sealed string, aad []byte) ([]byte, error) {
	parts := strings.SplitN(sealed, ":", 3)
	if len(parts) != 3 || parts[0] != "v1" {
		return nil, ErrDecrypt
	}
	gcm, err := k.aead(parts[1])
	if err != nil {
		return nil, ErrDecrypt
	}
	raw, err := base64.RawStdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < gcm.NonceSize() {
		return nil, ErrDecrypt
	}
	pt, err := gcm.Open(nil, raw[:gcm.NonceSize()], raw[gcm.NonceSize():], aad)
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}

func (k *Keyring) aead(id string) (cipher.AEAD, error) {
	secret, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("keyring: no key %q", id)
	}
	block, err := aes.NewCipher(derive(secret, "secrets-at-rest"))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
