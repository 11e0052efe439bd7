package hub

// Origin says where a stream's media comes from, for listings and hooks.
type Origin struct {
	// Kind is "file", "rtsp-pull", "rtsp-push", ...
	Kind string
	// URL is the pull URL or file, without credentials.
	URL string
	// RemoteAddr is a pushing publisher's address.
	RemoteAddr string
}
