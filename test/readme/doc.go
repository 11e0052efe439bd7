// Package readme runs the README's command blocks as a reader would, one
// after the other in one shell, against a `svc dev` the test starts on
// ports of its own: every ```sh block must run as written on one machine,
// except the ones that say `# illustrative:` on their first line.
package readme
