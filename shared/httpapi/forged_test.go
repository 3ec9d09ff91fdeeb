package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
)

// partitionLog is a store that records, per request id, the partition of
// every item a request's store calls name: its reads, queries, window
// increments and writes.
type partitionLog struct {
	store.Store
	mu  sync.Mutex
	pks map[string][]string
}

func (s *partitionLog) note(ctx context.Context, pks ...string) {
	id := ids.RequestID(ctx)
	if id == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pks[*id] = append(s.pks[*id], pks...)
}

// of is what the request touched.
func (s *partitionLog) of(requestID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.pks[requestID]...)
}

func (s *partitionLog) Get(ctx context.Context, k store.Key) (store.Item, error) {
	s.note(ctx, k.PK)
	return s.Store.Get(ctx, k)
}

func (s *partitionLog) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	for _, k := range keys {
		s.note(ctx, k.PK)
	}
	return s.Store.GetMany(ctx, keys)
}

func (s *partitionLog) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	s.note(ctx, q.PK)
	return s.Store.Query(ctx, q)
}

func (s *partitionLog) Transact(ctx context.Context, ops ...store.Op) error {
	for _, op := range ops {
		s.note(ctx, op.Item.PK)
	}
	return s.Store.Transact(ctx, ops...)
}

func (s *partitionLog) Increment(ctx context.Context, k store.Key, attr string, delta, below, expiresAt int64) (int64, error) {
	s.note(ctx, k.PK)
	return s.Store.Increment(ctx, k, attr, delta, below, expiresAt)
}

// windowCount is the count stored in the vendor's window of class for the
// minute starting at start.
func windowCount(t *testing.T, e *apitest.Env, vendorID string, class ratelimit.Class, start time.Time) int64 {
	t.Helper()
	it, err := e.Store.Get(context.Background(), datamodel.RateKey(datamodel.VendorPartition(vendorID), string(class), start))
	if err != nil {
		t.Fatalf("%s window: %v", class, err)
	}
	return it.Nums[datamodel.RateCountAttr]
}

// TestForgedCredentialsCostTheVendorNothing: while many goroutines send
// forged credentials naming a vendor (token-shaped with a wrong secret,
// with the vendor's own token id and a wrong secret, expired, revoked,
// garbage shapes, discovery-shaped; and another vendor's genuine token),
// the vendor's own token makes its full allowance of reads and writes.
// Every one of its requests succeeds; every forged one is 401 with
// WWW-Authenticate, never 429, even once the window is spent; the windows'
// stored counts are exactly the vendor's own requests; and no forged
// request touched any item of the vendor's partition.
func TestForgedCredentialsCostTheVendorNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rec := &partitionLog{pks: map[string][]string{}}
		e := apitest.New(t, apitest.Options{Store: kind, WrapStore: func(s store.Store) store.Store { rec.Store = s; return rec }})
		ctx := context.Background()
		reads, writes := e.App.Config.RateReads, e.App.Config.RateWrites
		if reads != 60 || writes != 12 {
			t.Fatalf("default allowances %d/%d, want 60/12", reads, writes)
		}
		v := e.Vendor.ID
		p := mustCreate(t, e, "forged-product", simpleProduct("forged"))
		other, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(ctx, "Other", "other")
		if err != nil {
			t.Fatal(err)
		}
		theirs := e.NewToken(other.ID, auth.AllScopes()...)
		tokens := auth.Service{Store: e.Store, Clock: e.Clock}
		// An expiring token and a revoked one, both used (and so known
		// good to this process) before they stopped being valid; the
		// revoked one's first refusal is seen before the flood.
		expiring, err := tokens.Issue(ctx, v, auth.AllScopes(), 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		revoked, err := tokens.Issue(ctx, v, auth.AllScopes(), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{expiring.Token, revoked.Token, theirs} {
			if r := e.Do(apitest.Req{Path: "/vendors/" + v + "/products/" + p.Data.ID, Token: tok}); r.Status != http.StatusOK && tok != theirs {
				t.Fatalf("before the flood: %d %s", r.Status, r.Body)
			}
		}
		if _, err := tokens.Revoke(ctx, revoked.ID); err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Req{Path: "/vendors/" + v, Token: revoked.Token}).WantProblem(t, http.StatusUnauthorized, "UNAUTHENTICATED")
		// A fresh minute, and a fresh token of the vendor's: its first
		// request in this process is made during the flood.
		e.Clock.Advance(30 * time.Second)
		start := e.Clock.Now()
		if start != start.Truncate(time.Minute) {
			t.Fatalf("the flood's minute starts at %v", start)
		}
		mine := e.NewToken(v, auth.AllScopes()...)
		myID, _, _ := strings.Cut(strings.TrimPrefix(mine, "mkpat_"), "_")

		forged := []string{
			"mkpat_" + strings.Repeat("a", 26) + "_" + strings.Repeat("b", 52), // unknown id
			"mkpat_" + myID + "_" + strings.Repeat("c", 52),                    // the vendor's own token id, a wrong secret
			mine[:len(mine)-1] + flip(mine[len(mine)-1]),                       // one character of the secret wrong
			expiring.Token,
			revoked.Token,
			"mkpat_" + myID + "_" + strings.Repeat("c", 51), // one short
			"mkpat_" + myID,
			mine + "x",
			"not-a-token",
			"mkdsc_" + strings.Repeat("d", 26) + "_" + strings.Repeat("e", 52),
		}
		item := "/vendors/" + v + "/products/" + p.Data.ID
		list := "/vendors/" + v + "/products?limit=2"
		forgedReq := func(i int) apitest.Req {
			tok := forged[(i/5)%len(forged)] // every bearer on every route
			switch i % 5 {
			case 4:
				// A discovery route: a forged discovery credential (or any
				// other) spends no pairing's window either.
				return apitest.Req{Path: "/store-pairings/current", Token: tok}
			case 0:
				return apitest.Req{Path: list, Token: tok}
			case 1:
				return apitest.Req{Path: item, Token: tok}
			case 2:
				return apitest.Req{Method: http.MethodPost, Path: "/vendors/" + v + "/products", Token: tok, Body: simpleProduct(fmt.Sprintf("forged-%d", i)),
					Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("forged-create-%d", i)}}
			case 3:
				return apitest.Req{Path: "/vendors/" + v, Token: tok}
			}
			panic("unreachable")
		}

		type sent struct {
			req apitest.Req
			res *apitest.Resp
		}
		var mu sync.Mutex
		var forgedSent, theirsSent []sent
		stop := make(chan struct{})
		var flood sync.WaitGroup
		const flooders = 12
		// Stopped before the test ends, however it ends: the server closes then.
		stopFlood := sync.OnceFunc(func() { close(stop); flood.Wait() })
		defer stopFlood()
		for g := range flooders {
			flood.Add(1)
			go func() {
				defer flood.Done()
				for i := g; ; i += flooders {
					select {
					case <-stop:
						return
					default:
					}
					req := forgedReq(i)
					if i%7 == 3 && strings.HasPrefix(req.Path, "/vendors/") {
						req.Token = theirs // a genuine token of another vendor
					}
					res := e.Do(req)
					mu.Lock()
					if req.Token == theirs {
						theirsSent = append(theirsSent, sent{req, res})
					} else {
						forgedSent = append(forgedSent, sent{req, res})
					}
					mu.Unlock()
				}
			}()
		}

		// The vendor's own allowance, four goroutines at a time.
		var own []*apitest.Resp
		var ownMu sync.Mutex
		var real sync.WaitGroup
		jobs := make(chan apitest.Req)
		for range 4 {
			real.Add(1)
			go func() {
				defer real.Done()
				for req := range jobs {
					res := e.Do(req)
					ownMu.Lock()
					own = append(own, res)
					ownMu.Unlock()
				}
			}()
		}
		for i := range reads + writes {
			var req apitest.Req
			switch {
			case i%6 == 5 && i/6 < writes:
				req = apitest.Req{Method: http.MethodPost, Path: "/vendors/" + v + "/products", Token: mine, Body: simpleProduct(fmt.Sprintf("mine-%d", i)),
					Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("mine-create-%d", i)}}
			case i%3 == 0:
				req = apitest.Req{Path: list, Token: mine}
			case i%3 == 1:
				req = apitest.Req{Path: item, Token: mine}
			default:
				req = apitest.Req{Path: "/vendors/" + v, Token: mine}
			}
			jobs <- req
		}
		close(jobs)
		real.Wait()
		// The window is spent: the vendor's next read and write are 429,
		// and forged credentials still 401 (no oracle of a busy vendor).
		for _, req := range []apitest.Req{{Path: item, Token: mine}, {Method: http.MethodPost, Path: "/vendors/" + v + "/products", Token: mine,
			Body: simpleProduct("mine-over"), Headers: map[string]string{"Idempotency-Key": "mine-create-over"}}} {
			if r := e.Do(req); r.Status != http.StatusTooManyRequests {
				t.Errorf("%s over the allowance: %d, want 429", req.Method, r.Status)
			}
		}
		for i := range 5 * len(forged) {
			req := forgedReq(i)
			res := e.Do(req)
			mu.Lock()
			forgedSent = append(forgedSent, sent{req, res})
			mu.Unlock()
		}
		stopFlood()
		if e.Clock.Now() != start {
			t.Fatalf("the clock moved during the flood")
		}

		ok := map[int]int{}
		for _, r := range own {
			ok[r.Status]++
			if r.Status >= 300 {
				t.Errorf("the vendor's own request: %d %s", r.Status, r.Body)
			}
		}
		if ok[http.StatusOK] != reads || ok[http.StatusCreated] != writes {
			t.Errorf("the vendor's own statuses %v, want %d reads and %d writes", ok, reads, writes)
		}
		if len(forgedSent) < 5*len(forged) || len(theirsSent) == 0 {
			t.Fatalf("%d forged and %d foreign requests sent", len(forgedSent), len(theirsSent))
		}
		vendorPK := datamodel.VendorPartition(v)
		wrong := map[int]int{}
		var intruded, readMore []string
		for _, s := range forgedSent {
			touched := rec.of(s.res.Header.Get("X-Request-Id"))
			if slices.Contains(touched, vendorPK) {
				intruded = append(intruded, fmt.Sprintf("%.20s… %s %s: %v", s.req.Token, s.req.Method, s.req.Path, touched))
			}
			if len(touched) > 1 {
				readMore = append(readMore, fmt.Sprintf("%.20s…: %v", s.req.Token, touched))
			}
			if s.res.Status != http.StatusUnauthorized {
				wrong[s.res.Status]++
				continue
			}
			s.res.WantProblem(t, http.StatusUnauthorized, "UNAUTHENTICATED")
			if got := s.res.Header.Get("WWW-Authenticate"); got != `Bearer realm="moku", error="invalid_token"` {
				t.Errorf("%s %s: WWW-Authenticate %q", s.req.Method, s.req.Path, got)
			}
			if s.res.Header.Get("RateLimit-Limit") != "" || s.res.Header.Get("Retry-After") != "" {
				t.Errorf("a forged request got rate headers: %v", s.res.Header)
			}
		}
		if len(wrong) > 0 {
			t.Errorf("forged requests answered %v besides 401", wrong)
		}
		if len(intruded) > 0 {
			t.Errorf("%d of %d forged requests touched the vendor's partition, as %s", len(intruded), len(forgedSent), intruded[0])
		}
		if len(readMore) > 0 {
			t.Errorf("%d forged requests read more than their token, as %s", len(readMore), readMore[0])
		}
		var foreign []string
		for _, s := range theirsSent {
			s.res.WantProblem(t, http.StatusNotFound, "NOT_FOUND")
			if touched := rec.of(s.res.Header.Get("X-Request-Id")); slices.Contains(touched, vendorPK) {
				foreign = append(foreign, fmt.Sprint(touched))
			}
		}
		if len(foreign) > 0 {
			t.Errorf("%d of %d requests with another vendor's token touched the vendor's partition, as %s", len(foreign), len(theirsSent), foreign[0])
		}
		if got := windowCount(t, e, v, ratelimit.Read, start); got != int64(reads) {
			t.Errorf("read window holds %d, want the vendor's own %d", got, reads)
		}
		if got := windowCount(t, e, v, ratelimit.Write, start); got != int64(writes) {
			t.Errorf("write window holds %d, want the vendor's own %d", got, writes)
		}
		t.Logf("%d forged and %d foreign requests beside the vendor's %d", len(forgedSent), len(theirsSent), len(own))
	})
}

// flip is another character of a token's alphabet.
func flip(b byte) string {
	if b == 'a' {
		return "b"
	}
	return "a"
}

// TestRefusedAfterUse: a token this process has used, revoked or expired
// since, is refused on its very next request with 401, never 429 (whether
// or not the vendor's window has room), leaves the window's count as it
// was, and from then on is checked alone, touching nothing of the
// vendor's.
func TestRefusedAfterUse(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rec := &partitionLog{pks: map[string][]string{}}
		e := apitest.New(t, apitest.Options{Store: kind, WrapStore: func(s store.Store) store.Store { rec.Store = s; return rec },
			Config: func(c *config.Config) { c.RateReads = 4 }})
		ctx := context.Background()
		v := e.Vendor.ID
		tokens := auth.Service{Store: e.Store, Clock: e.Clock}
		issue := func(ttl time.Duration) auth.Issued {
			is, err := tokens.Issue(ctx, v, auth.AllScopes(), ttl)
			if err != nil {
				t.Fatal(err)
			}
			return is
		}
		a, b, expiring := issue(0), issue(0), issue(10*time.Second)
		start := e.Clock.Now().Truncate(time.Minute)
		path := "/vendors/" + v + "/products?limit=2"
		for _, tok := range []string{a.Token, b.Token, expiring.Token} {
			if r := e.Do(apitest.Req{Path: path, Token: tok}); r.Status != http.StatusOK {
				t.Fatalf("while valid: %d %s", r.Status, r.Body)
			}
		}
		for _, id := range []string{a.ID, b.ID} {
			if _, err := tokens.Revoke(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		e.Clock.Advance(15 * time.Second) // past the expiry, inside the minute
		if e.Clock.Now().Truncate(time.Minute) != start {
			t.Fatal("the minute rolled")
		}
		refused := func(name, token string, alone bool, count int64) {
			t.Helper()
			r := e.Do(apitest.Req{Path: path, Token: token})
			r.WantProblem(t, http.StatusUnauthorized, "UNAUTHENTICATED")
			if got := r.Header.Get("WWW-Authenticate"); got != `Bearer realm="moku", error="invalid_token"` {
				t.Errorf("%s: WWW-Authenticate %q", name, got)
			}
			if r.Header.Get("RateLimit-Limit") != "" || r.Header.Get("Retry-After") != "" {
				t.Errorf("%s: rate headers on a 401: %v", name, r.Header)
			}
			if touched := rec.of(r.Header.Get("X-Request-Id")); alone && (len(touched) != 1 || !strings.HasPrefix(touched[0], "TOKEN#")) {
				t.Errorf("%s: touched %v, want its token alone", name, touched)
			}
			if got := windowCount(t, e, v, ratelimit.Read, start); got != count {
				t.Errorf("%s: the read window holds %d, want %d", name, got, count)
			}
		}
		// Each revoked token's first refusal is the one request of it that
		// still runs beside the window: with room, the unit it took is
		// given back to the process's lease, which the store counts as
		// taken (ratelimit.Leases), and the vendor's own request has it;
		// with none, the refusal is still 401.
		refused("revoked, the window with room", a.Token, false, 4)
		if r := e.Get(path); r.Status != http.StatusOK {
			t.Fatalf("the last unit: %d %s", r.Status, r.Body)
		}
		e.Get(path).WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
		refused("revoked, the window spent", b.Token, false, 4)
		refused("revoked, again", a.Token, true, 4)
		refused("revoked, again", b.Token, true, 4)
		refused("expired", expiring.Token, true, 4)
		refused("expired, again", expiring.Token, true, 4)
	})
}
