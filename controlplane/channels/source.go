package channels

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/shared/credurl"
)

// maskUser is what stands in a returned URL where credentials are stored.
const maskUser = credurl.Mask

// maxSourceURL bounds a source URL (credentials included).
const maxSourceURL = 2048

// source is a caller's source URL taken apart: the URL without
// credentials (user and password parameters masked, see package credurl),
// the new credentials it carried, and which stored ones the caller asked
// to keep by sending the mask back.
type source struct {
	bare string
	// creds are the new credentials (masks left out).
	creds credurl.Credentials
	// keepUser is set when the userinfo was the mask ("***@"); keepParams
	// lists the parameters sent as "name=***".
	keepUser   bool
	keepParams []string
}

// keeps reports whether the caller asked to keep stored credentials.
func (s source) keeps() bool { return s.keepUser || len(s.keepParams) > 0 }

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
	u.Scheme = strings.ToLower(u.Scheme)
	bare, creds, err := credurl.Split(u.String())
	if err != nil {
		return source{}, fmt.Errorf("%w: sourceUrl is not a valid URL", ErrInvalid)
	}
	s := source{bare: bare}
	if creds.HasUser {
		_, hasPass := u.User.Password()
		switch {
		case creds.User == maskUser && !hasPass:
			s.keepUser = true
			creds.User, creds.HasUser = "", false
		case creds.User == "":
			return source{}, fmt.Errorf("%w: sourceUrl has credentials without a user name", ErrInvalid)
		case len(creds.User) > 256 || len(creds.Password) > 256:
			return source{}, fmt.Errorf("%w: sourceUrl credentials must be at most 256 characters each", ErrInvalid)
		}
	}
	for k, v := range creds.Params {
		switch {
		case v == maskUser:
			s.keepParams = append(s.keepParams, k)
			delete(creds.Params, k)
		case len(v) > 256:
			return source{}, fmt.Errorf("%w: sourceUrl credentials must be at most 256 characters each", ErrInvalid)
		}
	}
	slices.Sort(s.keepParams)
	if len(creds.Params) == 0 {
		creds.Params = nil
	}
	s.creds = creds
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

// sameServer reports whether two credential-free URLs have the same
// scheme, host and port: stored credentials may follow a URL only that far.
func sameServer(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Hostname(), ub.Hostname()) && ua.Port() == ub.Port()
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

// sealCredentials seals the credentials bound to the channel's key, so a
// sealed value copied onto another channel does not open.
func sealCredentials(keys *keyring.Keyring, id ChannelID, cr credurl.Credentials) (string, error) {
	raw, err := json.Marshal(cr)
	if err != nil {
		return "", err
	}
	return keys.Seal(raw, []byte(channelKey(id)))
}

// openCredentials opens the channel's sealed credentials.
func openCredentials(keys *keyring.Keyring, c *Channel) (credurl.Credentials, error) {
	var cr credurl.Credentials
	raw, err := keys.Open(c.SealedCredentials, []byte(channelKey(c.ChannelID)))
	if err != nil {
		return cr, fmt.Errorf("opening the source credentials of channel %s: %w", c.ChannelID, err)
	}
	if err := json.Unmarshal(raw, &cr); err != nil {
		return cr, fmt.Errorf("source credentials of channel %s: %w", c.ChannelID, err)
	}
	cr.HasUser = cr.User != ""
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
	full, err := credurl.Join(c.SourceURL, cr)
	if err != nil {
		return "", fmt.Errorf("source URL of channel %s: %w", c.ChannelID, err)
	}
	return full, nil
}

// stripCredentials removes any credentials from a filter value, so
// searching by a URL copied with its password still matches and the
// password is not used in a query.
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

// withoutMasks empties the masked credential parameters of a bare URL (a
// channel imported without its credentials keeps their places).
func withoutMasks(bare string) string {
	_, masked, err := credurl.Split(bare)
	if err != nil || len(masked.Params) == 0 {
		return bare
	}
	for k := range masked.Params {
		masked.Params[k] = ""
	}
	full, err := credurl.Join(bare, credurl.Credentials{Params: masked.Params})
	if err != nil {
		return bare
	}
	return full
}

// setSource applies a caller's source URL to ch: the URL without
// credentials, and the sealed credentials it carried, kept or removed.
// Stored credentials are kept (the caller sent the mask back) only while
// the scheme, host and port stay the same: pointing a channel at another
// server needs the credentials again, so nobody who may edit a channel can
// have its camera password sent to a server of their choice.
//
// sent reports whether the caller sent credentials itself (not the mask).
func (s *Service) setSource(ch *Channel, raw string) (changed []string, sent bool, err error) {
	src, err := splitSource(raw)
	if err != nil {
		return nil, false, err
	}
	stored := credurl.Credentials{}
	if ch.HasCredentials() {
		if stored, err = openCredentials(s.Keys, ch); err != nil {
			return nil, false, err
		}
	}
	sent = !src.creds.Empty()
	next := src.creds
	if src.keeps() {
		if !ch.HasCredentials() {
			return nil, false, fmt.Errorf("%w: sourceUrl has masked credentials (%q) but none are stored; send the real user name and password", ErrInvalid, maskUser)
		}
		if !sameServer(ch.SourceURL, src.bare) {
			return nil, false, fmt.Errorf("%w: stored source credentials are kept only while the scheme, host and port stay the same; "+
				"with a URL on another server send the credentials again, or none", ErrInvalid)
		}
		if src.keepUser {
			if !stored.HasUser {
				return nil, false, fmt.Errorf("%w: sourceUrl has masked user credentials (%q@) but none are stored", ErrInvalid, maskUser)
			}
			next.User, next.Password, next.HasUser = stored.User, stored.Password, true
		}
		for _, k := range src.keepParams {
			v, ok := stored.Params[k]
			if !ok {
				return nil, false, fmt.Errorf("%w: sourceUrl has a masked credential parameter that is not stored; send its value", ErrInvalid)
			}
			if next.Params == nil {
				next.Params = map[string]string{}
			}
			next.Params[k] = v
		}
	}
	if src.bare != ch.SourceURL {
		ch.SourceURL, changed = src.bare, append(changed, "sourceUrl")
	}
	switch {
	case next.Empty():
		if ch.HasCredentials() {
			ch.SealedCredentials, ch.CredentialsOnlyInParams, changed = "", false, append(changed, "sourceCredentials")
		}
	case ch.HasCredentials() && stored.Equal(next):
		// The same credentials sent again change nothing.
	default:
		sealed, err := sealCredentials(s.Keys, ch.ChannelID, next)
		if err != nil {
			return nil, false, err
		}
		ch.SealedCredentials, ch.CredentialsOnlyInParams, changed = sealed, !next.HasUser, append(changed, "sourceCredentials")
	}
	return changed, sent, nil
}
