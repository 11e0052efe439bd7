package rtsp

import (
	"fmt"
	"net/url"
	"strings"
)

// ResolveControl returns the URL of a media or session control attribute
// relative to base (the Content-Base, else Content-Location, else the
// DESCRIBE URL). "*" and "" mean base itself; an absolute rtsp:// URL is
// taken as is. A relative control is appended to base as a path segment
// even when base does not end in '/': that is what cameras and servers
// mean (RFC 3986 resolution would replace the last segment, and servers
// such as live555 answer 404 then). The base's query is kept unless the
// control carries its own, so tokens in a camera URL survive SETUP.
func ResolveControl(base *url.URL, control string) (*url.URL, error) {
	control = strings.TrimSpace(control)
	if control == "" || control == "*" {
		u := *base
		return &u, nil
	}
	if lc := strings.ToLower(control); strings.HasPrefix(lc, "rtsp://") || strings.HasPrefix(lc, "rtsps://") {
		u, err := url.Parse(control)
		if err != nil {
			return nil, fmt.Errorf("%w: control %q: %w", ErrBadSDP, Truncate(control), err)
		}
		return u, nil
	}
	path, query, hasQuery := strings.Cut(control, "?")
	u := *base
	if strings.HasPrefix(path, "/") {
		u.Path = path
	} else {
		u.Path = strings.TrimSuffix(base.Path, "/") + "/" + path
	}
	u.RawPath = ""
	if hasQuery {
		u.RawQuery = query
	}
	return &u, nil
}
