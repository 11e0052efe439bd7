// Package shared is the root of code used by more than one role: logging,
// build information and, as the roles arrive, the wire types between them
// and the cluster PKI. Nothing under shared/ imports a role.
package shared
