// Package credurl finds the credentials a media source URL carries, so
// they can be split off to be sealed, masked in answers and logs, and put
// back only where the URL is used. Cameras take them in three places: the
// userinfo (rtsp://admin:secret@cam/...), the query
// (rtsp://cam/stream?user=admin&password=secret, common on Dahua and
// Hikvision firmware) and a path segment of name=value pairs
// (rtsp://cam/user=admin&password=secret&channel=1&stream=0.sdp, the XM
// form). Parameters are recognised by name (Names); their values are kept
// exactly as written, so putting them back restores the URL byte for byte.
package credurl

import (
	"net/url"
	"strings"
)

// Mask stands where a credential was: "***@" for the userinfo, name=*** for
// a parameter. A caller that sends the mask back means "keep what is
// stored".
const Mask = "***"

// Names are the parameter names (compared without case) that carry a user
// name or a password in a query or a path segment.
var Names = []string{"user", "username", "usr", "loginuse", "password", "passwd", "pwd", "pass", "psw", "loginpas"}

func isCredentialName(name string) bool {
	for _, n := range Names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// Credentials are what Split took out of a URL. Params maps a parameter's
// place and name ("q:password" in the query, "p:password" in the path) to
// its value as written (still percent-encoded).
type Credentials struct {
	User     string            `json:"u,omitempty"`
	Password string            `json:"p,omitempty"`
	HasUser  bool              `json:"-"`
	Params   map[string]string `json:"q,omitempty"`
}

// Empty reports whether there are no credentials at all.
func (c Credentials) Empty() bool {
	return !c.HasUser && c.User == "" && c.Password == "" && len(c.Params) == 0
}

// Equal reports whether two sets of credentials are the same.
func (c Credentials) Equal(o Credentials) bool {
	if c.User != o.User || c.Password != o.Password || len(c.Params) != len(o.Params) {
		return false
	}
	for k, v := range c.Params {
		if w, ok := o.Params[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Split parses raw and returns it without credentials: no userinfo, and
// every credential parameter's value replaced by Mask. The second result
// holds what was removed; its HasUser is set when there was a userinfo
// (possibly with an empty user). Split never puts raw into an error.
func Split(raw string) (string, Credentials, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", Credentials{}, errUnparsable
	}
	var c Credentials
	if u.User != nil {
		c.HasUser = true
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
		u.User = nil
	}
	params := map[string]string{}
	if u.RawQuery != "" {
		u.RawQuery = maskPairs(u.RawQuery, "q:", params)
	}
	if esc := u.EscapedPath(); strings.Contains(esc, "=") {
		segs := strings.Split(esc, "/")
		for i, s := range segs {
			if strings.Contains(s, "=") {
				segs[i] = maskPairs(s, "p:", params)
			}
		}
		if p := strings.Join(segs, "/"); p != esc {
			dec, err := url.PathUnescape(p)
			if err != nil {
				return "", Credentials{}, errUnparsable
			}
			u.Path, u.RawPath = dec, p
		}
	}
	if len(params) > 0 {
		c.Params = params
	}
	return u.String(), c, nil
}

// maskPairs replaces the values of credential parameters in a list of
// name=value pairs separated by '&', recording them under prefix+name.
func maskPairs(s, prefix string, into map[string]string) string {
	pairs := strings.Split(s, "&")
	changed := false
	for i, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || !isCredentialName(unescape(name)) {
			continue
		}
		into[prefix+name] = value
		pairs[i], changed = name+"="+Mask, true
	}
	if !changed {
		return s
	}
	return strings.Join(pairs, "&")
}

func unescape(s string) string {
	if v, err := url.QueryUnescape(s); err == nil {
		return v
	}
	return s
}

// Join puts credentials back into a URL Split produced: the userinfo, and
// each masked parameter that c has a value for.
func Join(bare string, c Credentials) (string, error) {
	u, err := url.Parse(bare)
	if err != nil {
		return "", errUnparsable
	}
	if c.HasUser || c.User != "" || c.Password != "" {
		if c.Password == "" {
			u.User = url.User(c.User)
		} else {
			u.User = url.UserPassword(c.User, c.Password)
		}
	}
	if len(c.Params) == 0 {
		return u.String(), nil
	}
	if u.RawQuery != "" {
		u.RawQuery = fillPairs(u.RawQuery, "q:", c.Params)
	}
	if esc := u.EscapedPath(); strings.Contains(esc, "=") {
		segs := strings.Split(esc, "/")
		for i, s := range segs {
			if strings.Contains(s, "=") {
				segs[i] = fillPairs(s, "p:", c.Params)
			}
		}
		if p := strings.Join(segs, "/"); p != esc {
			dec, err := url.PathUnescape(p)
			if err != nil {
				return "", errUnparsable
			}
			u.Path, u.RawPath = dec, p
		}
	}
	return u.String(), nil
}

func fillPairs(s, prefix string, from map[string]string) string {
	pairs := strings.Split(s, "&")
	for i, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || value != Mask {
			continue
		}
		if v, ok := from[prefix+name]; ok {
			pairs[i] = name + "=" + v
		}
	}
	return strings.Join(pairs, "&")
}

// Masked is bare (a URL from Split) as callers see it: "***@" before the
// host when hasUserinfo (parameters are already masked in bare).
func Masked(bare string, hasUserinfo bool) string {
	if !hasUserinfo || bare == "" {
		return bare
	}
	scheme, rest, ok := strings.Cut(bare, "://")
	if !ok {
		return ""
	}
	return scheme + "://" + Mask + "@" + rest
}

// Redact is raw with every credential masked, for logs, errors and
// answers; an unparsable URL becomes a fixed text, never itself.
func Redact(raw string) string {
	bare, c, err := Split(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return Masked(bare, c.HasUser)
}

// Has reports whether raw carries credentials in any of the three places
// (an unparsable URL counts as carrying them: it cannot be checked).
func Has(raw string) bool {
	_, c, err := Split(raw)
	return err != nil || !c.Empty()
}

type constError string

func (e constError) Error() string { return string(e) }

// errUnparsable is the one error of the package; it never quotes the URL.
const errUnparsable = constError("credurl: not a parsable URL")
