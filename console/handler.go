package console

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
)

// Options configure the console handler.
type Options struct {
	// MediaOrigins lists the origins (scheme://host[:port]) of the media
	// servers' HTTP ports, where the live view's players fetch their
	// streams; they join the policy's connect-src and media-src. Called for
	// every index.html, so a media server enrolled later is allowed after
	// a reload. Nil: only the console's own origin.
	MediaOrigins func(ctx context.Context) []string
}

// asset is one built file, kept in memory; its gzip form is made on first
// use.
type asset struct {
	name        string
	body        []byte
	contentType string
	etag        string
	// immutable files have a content hash in their name (Vite's assets/).
	immutable bool

	gzipOnce sync.Once
	gz       []byte
}

// Handler serves the embedded console.
type Handler struct {
	opts   Options
	assets map[string]*asset
	index  *asset
}

// New loads the embedded build.
func New(o Options) (*Handler, error) {
	root, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, err
	}
	return newHandler(root, o)
}

func newHandler(root fs.FS, o Options) (*Handler, error) {
	h := &Handler{opts: o, assets: map[string]*asset{}}
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = http.DetectContentType(body)
		}
		h.assets["/"+p] = &asset{name: p, body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`,
			immutable: strings.HasPrefix(p, "assets/")}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console build: %w", err)
	}
	h.index = h.assets["/index.html"]
	if h.index == nil {
		return nil, fmt.Errorf("console build: dist/index.html is missing (run make console)")
	}
	return h, nil
}

// compressible types are worth gzipping; images and video already are.
func compressible(contentType string) bool {
	for _, p := range []string{"text/", "application/javascript", "application/json", "image/svg+xml"} {
		if strings.HasPrefix(contentType, p) {
			return true
		}
	}
	return false
}

func (a *asset) gzipped() []byte {
	a.gzipOnce.Do(func() {
		if !compressible(a.contentType) || len(a.body) < 512 {
			return
		}
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		w.Write(a.body)
		w.Close()
		if b.Len() < len(a.body) {
			a.gz = b.Bytes()
		}
	})
	return a.gz
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// Policy is the Content-Security-Policy of the console's document: its own
// scripts and styles only (no inline code, no eval), API calls and the
// runtime-state WebSocket to its own origin, and the players' fetches and
// MSE blob: sources to the media origins.
func Policy(mediaOrigins []string) string {
	media := ""
	if len(mediaOrigins) > 0 {
		media = " " + strings.Join(mediaOrigins, " ")
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self' blob:",
		"font-src 'self'",
		"connect-src 'self'" + media,
		"media-src 'self' blob:" + media,
		"manifest-src 'self'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
		"object-src 'none'",
	}, "; ")
}

// cleanOrigins keeps well-formed, distinct origins in a stable order, so a
// stray value cannot inject another directive.
func cleanOrigins(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range in {
		o = strings.TrimRight(o, "/")
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") || strings.ContainsAny(o, " ;,'\"\r\n\t") || seen[o] {
			continue
		}
		seen[o] = true
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
}

// ServeHTTP implements http.Handler for GET and HEAD.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := path.Clean("/" + r.URL.Path)
	a := h.assets[p]
	switch {
	case a != nil:
	case strings.HasPrefix(p, "/assets/") || path.Ext(p) != "":
		// A missing file is not a client route: answering index.html would
		// hand HTML to a <script> and hide a broken build.
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "not found", http.StatusNotFound)
		return
	default:
		a = h.index
	}
	if a == h.index {
		var origins []string
		if h.opts.MediaOrigins != nil {
			origins = h.opts.MediaOrigins(r.Context())
		}
		w.Header().Set("Content-Security-Policy", Policy(cleanOrigins(origins)))
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		if a.immutable {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
	}
	body, etag := a.body, a.etag
	if gz := a.gzipped(); gz != nil && acceptsGzip(r) {
		// Each encoding is its own representation with its own tag.
		body, etag = gz, strings.TrimSuffix(a.etag, `"`)+`-gzip"`
		w.Header().Set("Content-Encoding", "gzip")
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("ETag", etag)
	w.Header().Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		w.Header().Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}
