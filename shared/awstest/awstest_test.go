package awstest

import (
	"runtime"
	"testing"
)

// TestEndpoint: the variable's endpoint when set; without it the test
// skips, or fails when emulators are required.
func TestEndpoint(t *testing.T) {
	t.Setenv("AWSTEST_ENDPOINT", "http://127.0.0.1:1")
	if got := Endpoint(t, "AWSTEST_ENDPOINT", "the emulator", "scripts/x", "x.endpoint"); got != "http://127.0.0.1:1" {
		t.Fatalf("endpoint %q", got)
	}
	t.Setenv("AWSTEST_ENDPOINT", "")
	for required, want := range map[string]string{"": "skipped", "1": "failed"} {
		t.Setenv("REQUIRE_EMULATORS", required)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Endpoint(r, "AWSTEST_ENDPOINT", "the emulator", "scripts/x", "x.endpoint")
			r.ended = "returned"
		}()
		<-done
		if r.ended != want {
			t.Errorf("REQUIRE_EMULATORS=%q: %s, want %s", required, r.ended, want)
		}
	}
}

// recorder notes how Endpoint ended the test instead of ending it.
type recorder struct {
	testing.TB
	ended string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) { r.ended = "failed"; runtime.Goexit() }

func (r *recorder) Skipf(string, ...any) { r.ended = "skipped"; runtime.Goexit() }
