package fault

import (
	"errors"
	"fmt"
	"testing"
)

type detailed struct{ error }

func (detailed) Details() map[string]string { return map[string]string{"k": "v"} }
func (d detailed) Unwrap() error            { return d.error }

// The nearest coded error of a chain gives its meaning, through wrapping
// and joined errors; an error without one has none.
func TestOfFindsTheNearestCodedError(t *testing.T) {
	notFound := New(NotFound, "not_found", "no such thing")
	busy := NewRetryable(Conflict, "conflict", "busy")
	for _, tc := range []struct {
		err  error
		code string
		kind Kind
		rety bool
	}{
		{fmt.Errorf("%w: id 7", notFound), "not_found", NotFound, false},
		{fmt.Errorf("outer: %w", fmt.Errorf("%w: inner", busy)), "conflict", Conflict, true},
		{errors.Join(errors.New("plain"), notFound), "not_found", NotFound, false},
		{detailed{fmt.Errorf("%w: x", busy)}, "conflict", Conflict, true},
	} {
		c, ok := Of(tc.err)
		if !ok || c.ErrorCode() != tc.code || c.Kind() != tc.kind || c.Retryable() != tc.rety {
			t.Errorf("%v: %v %v", tc.err, c, ok)
		}
	}
	if _, ok := Of(errors.New("plain")); ok {
		t.Error("a plain error has a code")
	}
	var d Detailer
	if !errors.As(detailed{notFound}, &d) || d.Details()["k"] != "v" {
		t.Error("details not found")
	}
	if NotFound.String() != "not_found" || Kind(200).String() != "unknown" {
		t.Error("kind names")
	}
}
