package channels

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/svcplatform/svc/controlplane/keyring"
)

// maskUser is what stands in a returned URL where credentials are stored.
const maskUser = "***"

// maxSourceURL bounds a source URL (credentials included).
const maxSourceURL = 2048

// source is a caller's source URL taken apart: the URL without
// credentials, and what the caller said about credentials.
type source struct {
	bare string
	// keep is set when the caller sent the masked form back: the stored
	// credentials stay.
	keep bool
	// user and password are new credentials; both empty means none.
	user, password string
}

// splitSource parses a source URL from the network. Its errors never quote
// the URL, which may hold a password.
func splitSource(raw string) (source, error) {
	if raw == "" {
		return source{}, nil
	}
	if len(raw) > maxSourceURL {
		return source{}, fmt.Errorf("%w: sourceUrl must be at most %d characters", ErrInvalid, maxSourceURL)
	}
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return source{}, fmt.Errorf("%w: sourceUrl must not contain spaces or control characters", ErrInvalid)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return source{}, fmt.Errorf("%w: sourceUrl is not an absolute URL of the form scheme://host[:port]/path", ErrInvalid)
	}
	if u.Hostname() == "" {
		return source{}, fmt.Errorf("%w: sourceUrl has no host", ErrInvalid)
	}
	if p := u.Port(); p != "" {
		if n, err := parsePort(p); err != nil || n == 0 {
			return source{}, fmt.Errorf("%w: sourceUrl has an invalid port", ErrInvalid)
		}
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return source{}, fmt.Errorf("%w: sourceUrl must not have a fragment", ErrInvalid)
	}
	var s source
	if u.User != nil {
		user := u.User.Username()
		pass, hasPass := u.User.Password()
		switch {
		case user == maskUser && !hasPass:
			s.keep = true
		case user == "":
			return source{}, fmt.Errorf("%w: sourceUrl has credentials without a user name", ErrInvalid)
		case len(user) > 256 || len(pass) > 256:
			return source{}, fmt.Errorf("%w: sourceUrl credentials must be at most 256 characters each", ErrInvalid)
		default:
			s.user, s.password = user, pass
		}
		u.User = nil
	}
	u.Scheme = strings.ToLower(u.Scheme)
	s.bare = u.String()
	return s, nil
}

func parsePort(p string) (int, error) {
	n := 0
	for _, r := range p {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("not a number")
		}
		n = n*10 + int(r-'0')
		if n > 65535 {
			return 0, fmt.Errorf("out of range")
		}
	}
	return n, nil
}

// checkSourceScheme accepts a credential-free URL whose scheme is one of
// schemes.
func checkSourceScheme(bare string, schemes ...string) error {
	u, err := url.Parse(bare)
	if err != nil || !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("%w: sourceUrl scheme must be %s for this protocol", ErrInvalid, strings.Join(schemes, " or "))
	}
	return nil
}

// maskURL puts the mask where credentials are stored (url.User would
// percent-encode the asterisks).
func maskURL(bare string, hasCredentials bool) string {
	if !hasCredentials || bare == "" {
		return bare
	}
	scheme, rest, ok := strings.Cut(bare, "://")
	if !ok {
		return ""
	}
	return scheme + "://" + maskUser + "@" + rest
}

// credentials is the sealed payload.
type credentials struct {
	User     string `json:"u"`
	Password string `json:"p"`
}

// sealCredentials seals user and password bound to the channel's key, so a
// sealed value copied onto another channel does not open.
func sealCredentials(keys *keyring.Keyring, id ChannelID, user, password string) (string, error) {
	raw, err := json.Marshal(credentials{User: user, Password: password})
	if err != nil {
		return "", err
	}
	return keys.Seal(raw, []byte(channelKey(id)))
}

// openCredentials opens the channel's sealed credentials.
func openCredentials(keys *keyring.Keyring, c *Channel) (credentials, error) {
	var cr credentials
	raw, err := keys.Open(c.SealedCredentials, []byte(channelKey(c.ChannelID)))
	if err != nil {
		return cr, fmt.Errorf("opening the source credentials of channel %s: %w", c.ChannelID, err)
	}
	if err := json.Unmarshal(raw, &cr); err != nil {
		return cr, fmt.Errorf("source credentials of channel %s: %w", c.ChannelID, err)
	}
	return cr, nil
}

// fullURL rebuilds the source URL with its credentials.
func fullURL(keys *keyring.Keyring, c *Channel) (string, error) {
	if !c.HasCredentials() {
		return c.SourceURL, nil
	}
	cr, err := openCredentials(keys, c)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(c.SourceURL)
	if err != nil {
		return "", fmt.Errorf("source URL of channel %s: %w", c.ChannelID, err)
	}
	if cr.Password == "" {
		u.User = url.User(cr.User)
	} else {
		u.User = url.UserPassword(cr.User, cr.Password)
	}
	return u.String(), nil
}

// stripCredentials removes any userinfo from a filter value, so searching
// by a URL copied with its password still matches and the password is not
// used in a query.
func stripCredentials(v string) string {
	if s, err := splitSource(v); err == nil && s.bare != "" {
		return s.bare
	}
	if i := strings.Index(v, "@"); i >= 0 {
		if j := strings.Index(v, "://"); j >= 0 && j < i {
			return v[:j+3] + v[i+1:]
		}
	}
	return v
}
