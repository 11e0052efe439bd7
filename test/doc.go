// Package test holds cross-role tests of the repository as a whole (the
// import rule between roles, and later end-to-end tests with real peers),
// device simulators and fixtures.
package test
