package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// vendor is one tenant of the run and its credentials.
type vendor struct {
	id, token string
	item      string // an inventory item of its one product
	version   int    // the item's version, for the next adjustment
	// subscribed vendors expect every inventory_item.adjusted event at
	// their receiver path.
	subscribed bool
	uploads    bool // a well-behaved vendor that also uploads a small image once a minute
}

// receipt is an event's first arrival at the fast receiver.
type receipt struct{ at, created time.Time }

// latency is the delivery latency: receipt − the event's created_at.
func (r receipt) latency() time.Duration { return r.at.Sub(r.created) }

// call is one request of a well-behaved vendor.
type call struct {
	at      time.Time // when it was sent
	vendor  int
	status  int
	latency time.Duration
	err     bool
}

type load struct {
	o      options
	log    *slog.Logger
	srv    *server
	client *http.Client

	mu    sync.Mutex
	calls []call
	// received is the first receipt of each event at the fast receiver:
	// event id → when it arrived and the event's created_at.
	received map[string]receipt
	dupes    int

	forged    map[int]int // status → count
	crafted   []call
	tarpitHit atomic.Int64
	replays   atomic.Int64 // replays the tarpit vendors made
}

func run(ctx context.Context, log *slog.Logger, o options) (*report, error) {
	data, err := os.MkdirTemp("", "sellerapi-loadtest-")
	if err != nil {
		return nil, err
	}
	if !o.keep {
		defer os.RemoveAll(data)
	}
	l := &load{o: o, log: log, received: map[string]receipt{}, forged: map[int]int{},
		client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}

	fast, err := l.receiver(ctx, l.fastHook)
	if err != nil {
		return nil, err
	}
	tarpit, err := l.receiver(ctx, l.tarpitHook)
	if err != nil {
		return nil, err
	}
	args := strings.Fields(o.serveArgs)
	trace := ""
	if filepath.Base(o.cli) == "cloud" {
		// The deployed shape writes its trace, for the segments.
		trace = filepath.Join(data, "trace.jsonl")
		args = append(args, "--trace", trace)
	}
	log.Info("starting server", "cli", o.cli, "data", data)
	l.srv, err = start(ctx, o.cli, data, args)
	if err != nil {
		return nil, err
	}
	defer l.srv.stop()

	good, err := l.setup(ctx, o.vendors, "good", func(i int, v *vendor) error {
		v.uploads = i%10 == 5
		if float64(i%100) < o.subscribed*100 {
			v.subscribed = true
			return l.subscribe(ctx, v, fast+"/"+v.id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	tarpits, err := l.setup(ctx, o.tarpits, "tarpit", func(_ int, v *vendor) error {
		for range 20 {
			if err := l.subscribe(ctx, v, tarpit+"/"+v.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	crafters, err := l.setup(ctx, o.crafted, "crafted", nil)
	if err != nil {
		return nil, err
	}

	log.Info("load", "vendors", len(good), "warmup", o.warmup, "duration", o.duration)
	// The same load runs o.warmup first, not counted: what the well-behaved
	// saw, the server's CPU and its requests count from the end of it.
	from := time.Now().Add(o.warmup)
	var total atomic.Int64
	var peak atomic.Int64
	type mark struct {
		u     usage
		total int64
	}
	began := make(chan mark, 1)
	sample, stopSample := context.WithCancel(ctx)
	go func() {
		select {
		case <-sample.Done():
			began <- mark{treeUsage(l.srv.cmd.Process.Pid), total.Load()}
			return
		case <-time.After(time.Until(from)):
			began <- mark{treeUsage(l.srv.cmd.Process.Pid), total.Load()}
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-sample.Done():
				return
			case <-t.C:
				if u := treeUsage(l.srv.cmd.Process.Pid); u.rss > peak.Load() {
					peak.Store(u.rss)
				}
			}
		}
	}()
	loadCtx, cancel := context.WithTimeout(ctx, o.warmup+o.duration)
	var wg sync.WaitGroup
	for i, v := range good {
		wg.Go(func() { l.goodVendor(loadCtx, i, v, &total) })
	}
	for _, v := range tarpits {
		wg.Go(func() { l.hostileWriter(loadCtx, v, &total) })
	}
	for _, v := range crafters {
		wg.Go(func() { l.craftedUploads(loadCtx, v, &total) })
	}
	for range o.forgers {
		wg.Go(func() { l.forger(loadCtx, good, &total) })
	}
	wg.Wait()
	cancel()
	after := treeUsage(l.srv.cmd.Process.Pid)
	to := time.Now()
	stopSample()
	before := <-began

	log.Info("draining deliveries", "for", o.drain)
	select {
	case <-time.After(o.drain):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	undelivered, expected, err := l.undelivered(ctx, good)
	if err != nil {
		return nil, err
	}
	r := l.report(from, undelivered, expected, total.Load()-before.total, after.cpu-before.u.cpu, max(peak.Load(), after.rss))
	if trace != "" {
		l.mu.Lock()
		received := l.counted(from)
		l.mu.Unlock()
		if r.segments, err = readSegments(trace, received, from, to); err != nil {
			return nil, fmt.Errorf("the trace: %w", err)
		}
	}
	return r, nil
}

// receiver serves hook on a fresh loopback port and returns its URL.
func (l *load) receiver(ctx context.Context, hook http.HandlerFunc) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: hook, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	go func() { <-ctx.Done(); srv.Close() }()
	return "http://" + ln.Addr().String(), nil
}

func (l *load) fastHook(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	now := time.Now()
	var ev struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
	}
	if json.Unmarshal(body, &ev) == nil && ev.ID != "" {
		l.mu.Lock()
		if _, seen := l.received[ev.ID]; seen {
			l.dupes++
		} else {
			l.received[ev.ID] = receipt{at: now, created: ev.CreatedAt}
		}
		l.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// tarpitHook holds each delivery 19 s, then fails it.
func (l *load) tarpitHook(w http.ResponseWriter, r *http.Request) {
	l.tarpitHit.Add(1)
	select {
	case <-time.After(19 * time.Second):
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusInternalServerError)
}

// setup creates n vendors with a token, one product and its inventory
// item, then runs more on each, eight vendors at a time.
func (l *load) setup(ctx context.Context, n int, name string, more func(int, *vendor) error) ([]*vendor, error) {
	vs := make([]*vendor, n)
	errc := make(chan error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			v, err := l.newVendor(ctx, fmt.Sprintf("%s-%d", name, i))
			if err == nil && more != nil {
				err = more(i, v)
			}
			vs[i] = v
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return nil, err
		}
	}
	l.log.Info("set up", "vendors", n, "kind", name)
	return vs, nil
}

func (l *load) newVendor(ctx context.Context, slug string) (*vendor, error) {
	var ven struct{ ID string }
	if err := l.srv.admin(ctx, &ven, "vendor", "create", "--name", slug, "--slug", slug); err != nil {
		return nil, err
	}
	var tok struct{ Token string }
	if err := l.srv.admin(ctx, &tok, "token", "issue", "--vendor", ven.ID, "--scopes", "all"); err != nil {
		return nil, err
	}
	v := &vendor{id: ven.ID, token: tok.Token}
	var prd struct{ Data struct{ ID string } }
	body := fmt.Sprintf(`{"kind":"simple","name":"Load %s","slug":"load-%s","description":"","price":100,"category":"c","subcategory":"s","image_urls":[],"options":{},"features":[],"related_product_ids":[],"weight_kg":0.1}`, slug, slug)
	if err := l.setupCall(ctx, v, http.MethodPost, "/products", body, http.StatusCreated, &prd); err != nil {
		return nil, err
	}
	var items struct {
		Data []struct {
			ID      string
			Version int
		}
	}
	if err := l.setupCall(ctx, v, http.MethodGet, "/inventory-items?limit=5", "", http.StatusOK, &items); err != nil {
		return nil, err
	}
	if len(items.Data) == 0 {
		return nil, fmt.Errorf("vendor %s: product %s has no inventory item", v.id, prd.Data.ID)
	}
	v.item, v.version = items.Data[0].ID, items.Data[0].Version
	return v, nil
}

func (l *load) subscribe(ctx context.Context, v *vendor, target string) error {
	body := fmt.Sprintf(`{"url":%q,"event_types":["inventory_item.adjusted"]}`, target)
	return l.setupCall(ctx, v, http.MethodPost, "/webhook-subscriptions", body, http.StatusCreated, nil)
}

// setupCall makes a request of the setup, waiting out a 429's Retry-After
// (hostile vendors' setup needs more writes than one minute allows).
func (l *load) setupCall(ctx context.Context, v *vendor, method, path, body string, want int, out any) error {
	for {
		status, b, retry, err := l.do(ctx, v.token, method, "/vendors/"+v.id+path, body, "")
		if err != nil {
			return err
		}
		if status == http.StatusTooManyRequests {
			select {
			case <-time.After(retry):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if status != want {
			return fmt.Errorf("%s %s: %d %s", method, path, status, b)
		}
		if out != nil {
			return json.Unmarshal(b, out)
		}
		return nil
	}
}

// do sends one request; its body is JSON unless contentType names another
// type (an image).
func (l *load) do(ctx context.Context, token, method, path, body, contentType string) (int, []byte, time.Duration, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.srv.base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		} else {
			req.Header.Set("Content-Type", "application/json")
			if method == http.MethodPost {
				req.Header.Set("Idempotency-Key", randomText(24))
			}
		}
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	retry := time.Second
	if s := resp.Header.Get("Retry-After"); s != "" {
		var n int
		if _, err := fmt.Sscan(s, &n); err == nil && n > 0 {
			retry = time.Duration(n) * time.Second
		}
	}
	return resp.StatusCode, b, retry, nil
}

// goodVendor reads and writes at steady intervals within its allowance,
// starting at a random phase so vendors spread over the minute.
func (l *load) goodVendor(ctx context.Context, i int, v *vendor, total *atomic.Int64) {
	readEvery := time.Minute / time.Duration(l.o.reads)
	writeEvery := time.Minute / time.Duration(l.o.writes)
	reads := time.NewTimer(randomDuration(readEvery))
	writes := time.NewTimer(randomDuration(writeEvery))
	defer reads.Stop()
	defer writes.Stop()
	var n, w int
	for {
		select {
		case <-ctx.Done():
			return
		case <-reads.C:
			reads.Reset(readEvery)
			n++
			path := []string{"/products", "/inventory-items/" + v.item, "", "/products?limit=20"}[n%4]
			l.measure(ctx, i, v.token, http.MethodGet, "/vendors/"+v.id+path, "", "", total)
		case <-writes.C:
			writes.Reset(writeEvery)
			w++
			if v.uploads && w%l.o.writes == 0 {
				img := smallPNG(v.id, w)
				sum := sha256.Sum256(img)
				l.measure(ctx, i, v.token, http.MethodPut, "/vendors/"+v.id+"/media/"+hex.EncodeToString(sum[:]), string(img), "image/png", total)
				continue
			}
			body := fmt.Sprintf(`{"target_on_hand":%d,"expected_version":%d}`, w%1000, v.version)
			status, b := l.measure(ctx, i, v.token, http.MethodPost, "/vendors/"+v.id+"/inventory-items/"+v.item+"/adjustments", body, "", total)
			if status == http.StatusOK || status == http.StatusCreated {
				var res struct{ Data struct{ Version int } }
				if json.Unmarshal(b, &res) == nil {
					v.version = res.Data.Version
				}
			}
		}
	}
}

// measure makes a well-behaved vendor's request and records it.
func (l *load) measure(ctx context.Context, i int, token, method, path, body, contentType string, total *atomic.Int64) (int, []byte) {
	t0 := time.Now()
	status, b, _, err := l.do(ctx, token, method, path, body, contentType)
	if ctx.Err() != nil {
		return 0, nil // the run ended mid-request: not a result
	}
	total.Add(1)
	l.mu.Lock()
	l.calls = append(l.calls, call{at: t0, vendor: i, status: status, latency: time.Since(t0), err: err != nil})
	l.mu.Unlock()
	if status >= 500 || status == http.StatusTooManyRequests || (status >= 400 && status != http.StatusConflict) {
		l.log.Warn("refused", "vendor", i, "method", method, "path", path, "status", status, "body", string(b))
	}
	return status, b
}

// hostileWriter spends its full write allowance (its subscriptions point
// at the tarpit): every other write is a replay of its latest event to all
// 20 subscriptions, the others adjustments, each waiting out its own 429s.
func (l *load) hostileWriter(ctx context.Context, v *vendor, total *atomic.Int64) {
	var event string // the latest event, once known
	for n := 0; ctx.Err() == nil; n++ {
		var status int
		var b []byte
		var retry time.Duration
		var err error
		replay := n%2 == 1 && event != ""
		if replay {
			status, b, retry, err = l.do(ctx, v.token, http.MethodPost, "/vendors/"+v.id+"/events/"+event+"/replay", "", "")
		} else {
			body := fmt.Sprintf(`{"target_on_hand":%d,"expected_version":%d}`, n%1000, v.version)
			status, b, retry, err = l.do(ctx, v.token, http.MethodPost, "/vendors/"+v.id+"/inventory-items/"+v.item+"/adjustments", body, "")
		}
		total.Add(1)
		if err == nil && status < 300 {
			if replay {
				l.replays.Add(1)
				continue
			}
			var res struct{ Data struct{ Version int } }
			if json.Unmarshal(b, &res) == nil && res.Data.Version > 0 {
				v.version = res.Data.Version
			}
			if event == "" {
				event = l.latestEvent(ctx, v, total)
			}
			continue
		}
		wait := time.Second
		if status == http.StatusTooManyRequests {
			wait = retry
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
}

// latestEvent is the id of the vendor's newest event, or "" when it could
// not be read.
func (l *load) latestEvent(ctx context.Context, v *vendor, total *atomic.Int64) string {
	status, b, _, err := l.do(ctx, v.token, http.MethodGet, "/vendors/"+v.id+"/events?limit=1", "", "")
	total.Add(1)
	var res struct{ Data []struct{ ID string } }
	if err != nil || status != http.StatusOK || json.Unmarshal(b, &res) != nil || len(res.Data) == 0 {
		return ""
	}
	return res.Data[0].ID
}

// craftedUploads uploads a repeated-scan JPEG every 10 s.
func (l *load) craftedUploads(ctx context.Context, v *vendor, total *atomic.Int64) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for n := uint16(1); ; n++ {
		img := repeatedScanJPEG(4000, 2_000_000, n)
		sum := sha256.Sum256(img)
		t0 := time.Now()
		status, _, _, err := l.do(ctx, v.token, http.MethodPut, "/vendors/"+v.id+"/media/"+hex.EncodeToString(sum[:]), string(img), "image/jpeg")
		if ctx.Err() != nil {
			return
		}
		total.Add(1)
		l.mu.Lock()
		l.crafted = append(l.crafted, call{at: t0, status: status, latency: time.Since(t0), err: err != nil})
		l.mu.Unlock()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// forger sends bearers of a token's shape with made-up secrets, each naming
// a random well-behaved vendor, at a bounded rate.
func (l *load) forger(ctx context.Context, victims []*vendor, total *atomic.Int64) {
	t := time.NewTicker(time.Second / time.Duration(max(l.o.forgeRate, 1)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v := victims[randomInt(len(victims))]
		token := "mkpat_" + randomText(26) + "_" + randomText(52)
		status, _, _, err := l.do(ctx, token, http.MethodGet, "/vendors/"+v.id+"/products", "", "")
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			status = -1
		}
		total.Add(1)
		l.mu.Lock()
		l.forged[status]++
		l.mu.Unlock()
	}
}

// undelivered lists each subscribed vendor's inventory_item.adjusted events
// and counts those its receiver never got.
func (l *load) undelivered(ctx context.Context, good []*vendor) (missing, expected int, err error) {
	l.mu.Lock()
	got := make(map[string]bool, len(l.received))
	for id := range l.received {
		got[id] = true
	}
	l.mu.Unlock()
	for _, v := range good {
		if !v.subscribed {
			continue
		}
		cursor := ""
		for {
			path := "/events?type=inventory_item.adjusted&limit=100"
			if cursor != "" {
				path += "&page_after=" + url.QueryEscape(cursor)
			}
			var page struct {
				Data []struct{ ID string }
				Page struct {
					Next *string `json:"next_cursor"`
				}
			}
			if err := l.setupCall(ctx, v, http.MethodGet, path, "", http.StatusOK, &page); err != nil {
				return 0, 0, err
			}
			for _, e := range page.Data {
				expected++
				if !got[e.ID] {
					missing++
				}
			}
			if page.Page.Next == nil || *page.Page.Next == "" {
				break
			}
			cursor = *page.Page.Next
		}
	}
	return missing, expected, nil
}

func smallPNG(seed string, n int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", seed, n)))
	for i := range img.Pix {
		img.Pix[i] = h[i%len(h)]
	}
	img.Set(0, 0, color.RGBA{A: 255})
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

const alphabet = "abcdefghijklmnopqrstuvwxyz234567"

func randomText(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[randomInt(len(alphabet))]
	}
	return string(b)
}

func randomInt(n int) int {
	v, _ := rand.Int(rand.Reader, big.NewInt(int64(n)))
	return int(v.Int64())
}

func randomDuration(d time.Duration) time.Duration {
	return time.Duration(randomInt(int(d/time.Millisecond))+1) * time.Millisecond
}
