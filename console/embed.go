// Package console serves the web console: the Vue application in this
// directory, built by `make console` into dist/ (committed, with hashed file
// names) and embedded in the binary, so every control node serves it at /
// and `make run` needs no Node.js. `make test` rebuilds it from the sources
// and fails when the committed dist differs.
//
// The handler serves the built files with their security headers (a strict
// Content-Security-Policy whose connect-src and media-src name the media
// servers' origins the live view plays from, X-Frame-Options, nosniff, a
// referrer policy), long-lived caching for hashed assets, no-cache for
// index.html, gzip when the client accepts it, and index.html for every
// other GET so client-side routes survive a reload.
package console

import "embed"

// dist is the built console (npm run build).
//
//go:embed all:dist
var dist embed.FS

//go:generate go run ./permgen
