package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/blob/fsblob"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/canonical"
	"github.com/moku/sellerapi/shared/media/mediatest"
)

// repeatedBandJPEG is the crafted upload, at a size that keeps the
// test fast: a progressive JPEG whose scans code the same band of its one
// component again and again, each scan a few bytes and a pass over every
// block.
func repeatedBandJPEG(w, h, scans int) []byte {
	s := []mediatest.Scan{{Comps: []int{0}}}
	for range scans {
		s = append(s, mediatest.Scan{Comps: []int{0}, Ss: 1, Se: 63})
	}
	return mediatest.ProgressiveJPEG(w, h, 1, s)
}

// A JPEG whose scans would make the decoder walk its blocks again and
// again is refused with 400 INVALID_MEDIA before any decoding: nothing is
// charged, nothing stored, the decode gate never entered. Progressive
// JPEGs of libjpeg's standard scan scripts are stored.
func TestMediaScanWorkBounded(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		dir := t.TempDir()
		e := mediaEnv(t, kind, fsblob.New(dir), mediaOpts{})
		for _, tc := range []struct {
			name string
			body []byte
			want string
		}{
			{"the same band, 20,000 scans", repeatedBandJPEG(512, 512, 20_000), "again"},
			{"the same band twice", repeatedBandJPEG(4000, 4000, 2), "again"},
		} {
			p := upload(e, e.Token, "image/jpeg", tc.body).WantProblem(t, http.StatusBadRequest, "INVALID_MEDIA")
			if !strings.Contains(p.Detail, tc.want) {
				t.Errorf("%s: detail %q does not name the rule (%q)", tc.name, p.Detail, tc.want)
			}
		}
		if u := countAdmitted(t, e); u != (admitted{}) {
			t.Fatalf("admitted %+v, want nothing", u)
		}
		if s := e.Server.MediaDecodes(); s.PeakRunning != 0 {
			t.Fatalf("decode gate %+v: a refused upload was decoded", s)
		}
		if stored, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(stored) != 0 {
			t.Fatalf("stored %v", stored)
		}
		bodies := [][]byte{mediatest.ProgressiveJPEG(640, 480, 3, mediatest.StandardScript(3))}
		files, err := filepath.Glob("../media/testdata/*.jpeg")
		if err != nil || len(files) == 0 {
			t.Fatalf("fixtures %v %v", files, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, b)
		}
		for _, b := range bodies {
			wantRecord(t, upload(e, e.Token, "image/jpeg", b))
		}
	})
}

// heldEncoder decodes as the service does, except the bytes of hostile
// uploads, whose decodes start and then hold their slot until the test
// lets them go: a decode that runs long, made deterministic.
type heldEncoder struct {
	hostile map[string]bool // digests
	started chan struct{}
	release chan struct{}
}

func (h *heldEncoder) encode(ctx context.Context, b []byte, hd media.Header, quality int, maxOutput int64) (media.Canonical, error) {
	if h.hostile[mediatest.Digest(b)] {
		h.started <- struct{}{}
		<-h.release // a Go decode does not stop for its context
	}
	return canonical.Encode(ctx, b, hd, quality, maxOutput)
}

// While one vendor's uploads hold every decode they may, another vendor's
// upload is decoded and stored: a vendor runs at most its share of the
// decode slots, and its further uploads wait behind its own.
func TestMediaHostileDecodesLeaveOthersASlot(t *testing.T) {
	held := &heldEncoder{hostile: map[string]bool{}, started: make(chan struct{}, 16), release: make(chan struct{})}
	var hostile [][]byte
	for i := range 4 {
		b := mediatest.JPEG(mediatest.Photo(64, 48, 3, uint64(100+i)), 90)
		held.hostile[mediatest.Digest(b)] = true
		hostile = append(hostile, b)
	}
	e := apitest.New(t, apitest.Options{Store: apitest.SQLite, Blob: fsblob.New(t.TempDir()), MediaEncode: held.encode, Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
	}})
	share := e.Server.MediaDecodes().Slots / 2
	if share < 1 {
		share = 1
	}
	var wg sync.WaitGroup
	status := make([]int, len(hostile))
	for i, b := range hostile {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status[i] = upload(e, e.Token, "image/jpeg", b).Status
		}()
	}
	// The hostile vendor's share of the slots is taken, the rest of its
	// uploads queue behind it.
	for range share {
		<-held.started
	}
	waitFor(t, func() bool {
		s := e.Server.MediaDecodes()
		return s.Running == share && s.Waiting == len(hostile)-share
	})
	ov, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), "Other", "other-decodes")
	if err != nil {
		t.Fatal(err)
	}
	body := mediatest.JPEG(mediatest.Photo(64, 48, 3, 7), 90)
	r := e.Do(apitest.Req{Method: http.MethodPut, Path: "/vendors/" + ov.ID + "/media/" + mediatest.Digest(body), Token: e.NewToken(ov.ID, auth.ProductsWrite),
		Body: body, Headers: map[string]string{"Content-Type": media.TypeJPEG}})
	wantRecord(t, r)
	if s := e.Server.MediaDecodes(); s.Running != share {
		t.Fatalf("gate %+v after the other vendor's upload, want the hostile decodes still running", s)
	}
	close(held.release)
	wg.Wait()
	for i, st := range status {
		if st != http.StatusOK {
			t.Errorf("hostile upload %d: %d once released", i, st)
		}
	}
}

// A decode that outlasts its deadline answers 503 with Retry-After, and
// its slot stays taken until the decode really ends (a Go decode cannot
// be interrupted): the vendor's next upload waits for it, nothing is
// charged.
func TestMediaDecodeDeadline(t *testing.T) {
	held := &heldEncoder{hostile: map[string]bool{}, started: make(chan struct{}, 4), release: make(chan struct{})}
	body := mediatest.JPEG(mediatest.Photo(64, 48, 3, 11), 90)
	held.hostile[mediatest.Digest(body)] = true
	e := apitest.New(t, apitest.Options{Store: apitest.SQLite, Blob: fsblob.New(t.TempDir()), MediaEncode: held.encode, Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
		c.MediaDecodeTimeout = 50e6 // 50 ms: the held decode never ends within it
	}})
	r := upload(e, e.Token, "image/jpeg", body)
	p := r.WantProblem(t, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "longer than") {
		t.Fatalf("503 %q, Retry-After %q", p.Detail, r.Header.Get("Retry-After"))
	}
	<-held.started
	if s := e.Server.MediaDecodes(); s.Running != 1 {
		t.Fatalf("gate %+v after the deadline, want the decode's slot still taken", s)
	}
	if u := countAdmitted(t, e); u != (admitted{}) {
		t.Fatalf("admitted %+v, want nothing", u)
	}
	close(held.release)
	waitFor(t, func() bool { return e.Server.MediaDecodes().Running == 0 })
}

// A decoder that panics, now off the request's goroutine, costs the
// request a 400 (a decode failure) and not the process; its slot is given
// back.
func TestMediaDecoderPanicIsTheRequests(t *testing.T) {
	panicking := func(context.Context, []byte, media.Header, int, int64) (media.Canonical, error) { panic("decoder bug") }
	e := apitest.New(t, apitest.Options{Store: apitest.SQLite, Blob: fsblob.New(t.TempDir()), MediaEncode: panicking, Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
	}})
	upload(e, e.Token, "image/jpeg", mediatest.JPEG(mediatest.Photo(32, 24, 3, 4), 90)).WantProblem(t, http.StatusBadRequest, "INVALID_MEDIA")
	if s := e.Server.MediaDecodes(); s.Running != 0 || s.PeakRunning != 1 {
		t.Fatalf("gate after a panicking decode: %+v", s)
	}
	if u := countAdmitted(t, e); u != (admitted{}) {
		t.Fatalf("admitted %+v, want nothing", u)
	}
}

// waitFor waits until cond holds: requests reaching the decode gate is
// synchronisation, not a timed assertion.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 10_000_000 {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}
