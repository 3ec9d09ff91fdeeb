package main

import (
	"errors"
	"strings"
	"testing"
)

// A function's reserved concurrency is a cap: one invocation more than it
// is throttled, as Lambda throttles it, and a finished one frees its place.
func TestReservedConcurrencyThrottles(t *testing.T) {
	fs := &Functions{pools: map[string]*pool{"Expirer": {fn: &Function{Name: "expirer", Reserved: 1}}}}
	p := fs.pools["Expirer"]
	if !p.enter() {
		t.Fatal("the first invocation was throttled")
	}
	_, err := fs.Invoke(t.Context(), "Expirer", []byte("{}"))
	var fe *FunctionError
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "TooManyRequestsException") {
		t.Fatalf("a second invocation while one runs: %v, want a throttle", err)
	}
	p.leave()
	if !p.enter() {
		t.Fatal("throttled after the running invocation ended")
	}
	unlimited := &pool{fn: &Function{Name: "api"}}
	for range 100 {
		if !unlimited.enter() {
			t.Fatal("a function without reserved concurrency was throttled")
		}
	}
}
