package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/client"
)

// apiFlags are the flags of the subcommands that call a running server
// through its API, as any client does.
type apiFlags struct {
	base, token, vendor string
}

const envToken = "MOKU_TOKEN"

func (f *apiFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.base, "base", "http://127.0.0.1:8080/v1", "the API's base URL")
	fs.StringVar(&f.token, "token", os.Getenv(envToken), "access token with webhooks and the needed write scopes (default $"+envToken+")")
	fs.StringVar(&f.vendor, "vendor", "", "vendor id (default: the token's only vendor)")
}

// open returns a client and the vendor to act on.
func (f *apiFlags) open(ctx context.Context) (*client.Client, string, error) {
	if f.token == "" {
		return nil, "", fmt.Errorf("no token: pass --token or set $%s (make run prints one on first start)", envToken)
	}
	c := client.New(f.base, f.token)
	if f.vendor != "" {
		return c, f.vendor, nil
	}
	vs, _, err := c.ListVendors(ctx)
	if err != nil {
		return nil, "", err
	}
	if len(vs) != 1 {
		return nil, "", fmt.Errorf("the token reaches %d vendors; pass --vendor", len(vs))
	}
	return c, vs[0].ID, nil
}

// listen subscribes a forwarder to event types for as long as it runs:
// every delivery is verified with the subscription's secret, printed, and
// (with --forward-to) posted on to a local URL with its headers unchanged,
// whose status becomes the delivery's answer. On exit (Ctrl-C) the
// subscription is deleted. The server must accept loopback webhook URLs
// (serve --allow-private-webhooks, as make run's local server can). With
// --sqs it follows an SQS destination instead (listen_sqs.go).
func listen(ctx context.Context, args []string, stdout io.Writer) error {
	var api apiFlags
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	api.define(fs)
	events := fs.String("events", "*", "comma-separated event types to receive, or *")
	forward := fs.String("forward-to", "", "local URL to post each verified delivery to, e.g. http://127.0.0.1:3000/webhooks")
	addr := fs.String("addr", "127.0.0.1:0", "where the forwarder listens (the subscription's URL)")
	printJSON := fs.Bool("print-json", false, "print each event's JSON body")
	after := fs.String("after", "", "first print the log's events of these types after this event id, oldest first (what a connector that stopped there missed)")
	test := fs.Bool("test", false, "once subscribed, ask the service for a test delivery (webhook_subscription.test) and print its answer")
	recoverSince := fs.String("recover-since", "", "once subscribed, ask the service to recover the log's events of these types since then (RFC 3339, or a duration ago such as 2h): delivered here, signed, oldest first")
	queue := fs.String("sqs", "", "follow an SQS destination instead: subscribe this queue URL and receive its messages (long polling), verifying, printing and forwarding each as a delivery, then deleting it")
	secret := fs.String("secret", "", "with --sqs: the signing secret of the vendor's subscription to that queue, to follow it as it is instead of subscribing anew")
	wait := fs.Duration("wait", 20*time.Second, "with --sqs: how long each receive waits for messages (1s to 20s)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *queue == "" && *secret != "" {
		return errors.New("--secret names the subscription to follow with --sqs; pass --sqs too")
	}
	if *wait < time.Second || *wait > 20*time.Second {
		return fmt.Errorf("--wait %s: give 1s to 20s", *wait)
	}
	var since time.Time
	if *recoverSince != "" {
		var err error
		if since, err = sinceOf(*recoverSince, time.Now()); err != nil {
			return err
		}
	}
	c, vendorID, err := api.open(ctx)
	if err != nil {
		return err
	}
	out := &printer{w: stdout, forward: *forward, json: *printJSON}
	types := strings.Split(*events, ",")
	var sub listened
	var follow func(context.Context) error
	if *queue != "" {
		q, err := openQueue(ctx, *queue)
		if err != nil {
			return err
		}
		if sub, err = queueSubscription(ctx, c, vendorID, *queue, types, *secret); err != nil {
			return err
		}
		follow = func(ctx context.Context) error { return q.follow(ctx, sub.secret, *wait, out) }
	} else {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		defer ln.Close()
		desc := "local listen " + ln.Addr().String()
		s, _, err := c.CreateWebhookSubscription(ctx, client.CreateWebhookSubscriptionRequest{VendorID: vendorID,
			Body: client.WebhookSubscriptionCreate{URL: new("http://" + ln.Addr().String() + "/"), EventTypes: types, Description: &desc}})
		if err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
		sub = listened{id: s.ID, url: s.URL, secret: s.Secret, types: s.EventTypes, owned: true}
		follow = func(ctx context.Context) error { return serveForwarder(ctx, ln, sub.secret, out) }
	}
	// A subscription listen made goes away however listen ends.
	defer func() {
		if !sub.owned {
			fmt.Fprintf(stdout, "Left subscription %s in place.\n", sub.id)
			return
		}
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, _, err := c.DeleteWebhookSubscription(cleanup, client.DeleteWebhookSubscriptionRequest{VendorID: vendorID, SubscriptionID: sub.id}); err != nil {
			fmt.Fprintf(stdout, "could not remove subscription %s: %v\n", sub.id, err)
			return
		}
		fmt.Fprintf(stdout, "Removed subscription %s.\n", sub.id)
	}()

	fmt.Fprintf(stdout, "Ready: subscription %s sends %s to %s (signing secret %s). Ctrl-C to stop.\n", sub.id, strings.Join(sub.types, ","), sub.url, sub.secret)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- follow(runCtx) }()
	if err := asks(ctx, c, vendorID, sub, out, *after, *test, *recoverSince != "", since); err != nil {
		cancel()
		<-done
		return err
	}
	// The follower returns once ctx ends (Ctrl-C), or when it fails.
	return <-done
}

// listened is the subscription listen follows; owned when listen made it
// (and removes it).
type listened struct {
	id, url, secret string
	types           []string
	owned           bool
}

// asks makes listen's requests once subscribed: the log after an event
// id, a test delivery, a recovery since a time.
func asks(ctx context.Context, c *client.Client, vendorID string, sub listened, out *printer, after string, test, recovery bool, since time.Time) error {
	if after != "" {
		if err := catchUp(ctx, c, vendorID, after, sub.types, out.w, &out.mu); err != nil {
			return err
		}
	}
	if test {
		res, _, err := c.TestWebhookSubscription(ctx, client.TestWebhookSubscriptionRequest{VendorID: vendorID, SubscriptionID: sub.id})
		if err != nil {
			return fmt.Errorf("test delivery: %w", err)
		}
		out.mu.Lock()
		fmt.Fprintf(out.w, "Test delivery %s: %s in %d ms\n", res.EventID, testOutcome(res), res.DurationMs)
		out.mu.Unlock()
	}
	if recovery {
		rcv, _, err := c.RecoverWebhookSubscription(ctx, client.RecoverWebhookSubscriptionRequest{VendorID: vendorID, SubscriptionID: sub.id,
			Body: client.WebhookRecoveryCreate{Since: since}})
		if err != nil {
			return fmt.Errorf("recover since %s: %w", since.Format(time.RFC3339), err)
		}
		out.mu.Lock()
		fmt.Fprintf(out.w, "Recovery %s queued: the events since %s arrive here oldest first, once %s is a minute old.\n", rcv.ID,
			rcv.Since.Format(time.RFC3339), rcv.Until.Format(time.RFC3339))
		out.mu.Unlock()
	}
	return nil
}

// serveForwarder receives the subscription's HTTPS deliveries on ln until
// ctx ends: a delivery that verifies is printed and forwarded, and its
// answer is the forward target's; one that does not is refused with 400.
func serveForwarder(ctx context.Context, ln net.Listener, secret string, out *printer) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := client.ReadWebhook(r, secret, time.Now())
		if err != nil {
			out.reject("delivery", err)
			http.Error(w, "signature not verified", http.StatusBadRequest)
			return
		}
		w.WriteHeader(out.deliver(r.Context(), d, r.Header))
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// printer prints what listen receives, one delivery's lines at a time,
// and forwards each verified delivery (--forward-to).
type printer struct {
	mu      sync.Mutex
	w       io.Writer
	forward string
	json    bool
}

// deliver prints a verified delivery and posts it on with its headers h;
// its answer is the forward target's status (200 without one).
func (p *printer) deliver(ctx context.Context, d client.Delivery, h http.Header) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s  --> %s [%s] %s/%s (delivery %s, attempt %s, signature verified)\n", time.Now().UTC().Format(time.TimeOnly),
		d.Event.Type, d.EventID, d.Event.Resource.Type, d.Event.Resource.ID, d.DeliveryID, d.Attempt)
	if p.json {
		fmt.Fprintf(p.w, "%s\n", d.Body)
	}
	status := http.StatusOK
	if p.forward != "" {
		status = forwardTo(ctx, p.forward, h, d.Body)
		fmt.Fprintf(p.w, "%s  <-- %d from %s\n", time.Now().UTC().Format(time.TimeOnly), status, p.forward)
	}
	return status
}

// reject prints what did not verify.
func (p *printer) reject(what string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s  rejected a %s: %v\n", time.Now().UTC().Format(time.TimeOnly), what, err)
}

// catchUp prints the log's events of types after the event id after,
// oldest first: the log a connector follows to find what it missed. The
// oldest-first list shows events once they have settled (a minute), so
// the newest may come by webhook first.
func catchUp(ctx context.Context, c *client.Client, vendorID, after string, types []string, stdout io.Writer, mu *sync.Mutex) error {
	req := client.ListEventsRequest{VendorID: vendorID, Order: client.ListEventsOrderAsc, After: after, Limit: 100}
	if len(types) > 0 && types[0] != "*" {
		req.Type = strings.Join(types, ",")
	}
	n := 0
	for ev, err := range c.AllEvents(ctx, req) {
		if err != nil {
			return fmt.Errorf("catch up after %s: %w", after, err)
		}
		mu.Lock()
		fmt.Fprintf(stdout, "%s  log %s [%s] %s/%s\n", ev.CreatedAt.UTC().Format(time.TimeOnly), ev.Type, ev.ID, ev.Resource.Type, ev.Resource.ID)
		mu.Unlock()
		n++
	}
	mu.Lock()
	fmt.Fprintf(stdout, "Caught up: %d events in the log after %s.\n", n, after)
	mu.Unlock()
	return nil
}

// sinceOf reads --recover-since: an RFC 3339 time, or a duration before now.
func sinceOf(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--recover-since %q: give an RFC 3339 time or a positive duration such as 2h", v)
	}
	return now.Add(-d), nil
}

// testOutcome says what a test delivery got: an HTTPS receiver's status,
// or what an AWS destination's API answered ({"MessageId": ...}).
func testOutcome(r client.WebhookSubscriptionTestResult) string {
	switch {
	case r.StatusCode != nil:
		return fmt.Sprintf("answered %d", *r.StatusCode)
	case r.Succeeded:
		return "delivered " + deref(r.Response)
	}
	return "no answer (" + deref(r.Error) + ")"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// forwardTo posts a delivery on with the headers it came with; a failure
// to reach the target answers 502, which the service retries.
func forwardTo(ctx context.Context, target string, h http.Header, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadGateway
	}
	for _, k := range []string{"Content-Type", "User-Agent", "Moku-Event-Id", "Moku-Delivery-Id", "Moku-Delivery-Attempt", "Moku-Signature"} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return http.StatusBadGateway
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	return res.StatusCode
}

// trigger makes a real change that writes an event of the given type, on
// fresh demo resources (a product "trigger-…", a connection "Trigger …"),
// with whatever changes must come first; it prints each step.
func trigger(ctx context.Context, args []string, stdout io.Writer) error {
	var api apiFlags
	fs := flag.NewFlagSet("trigger", flag.ContinueOnError)
	api.define(fs)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: local trigger TYPE [--base URL] [--token T] [--vendor V]; TYPE is one of %s", strings.Join(triggerTypes(), ", "))
	}
	typ := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	steps := triggerPlan(typ)
	if steps == nil {
		return fmt.Errorf("trigger: %q is not a type trigger makes; use one of %s", typ, strings.Join(triggerTypes(), ", "))
	}
	c, vendorID, err := api.open(ctx)
	if err != nil {
		return err
	}
	t := &triggerRun{c: c, vendor: vendorID, out: stdout, suffix: randomSuffix()}
	for _, step := range steps {
		if err := step(ctx, t); err != nil {
			return fmt.Errorf("trigger %s: %w", typ, err)
		}
	}
	fmt.Fprintf(stdout, "Trigger succeeded: %s was written.\n", typ)
	return nil
}

func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// triggerRun holds what the steps of one trigger made.
type triggerRun struct {
	c           *client.Client
	vendor      string
	out         io.Writer
	suffix      string
	product     client.Product
	item        client.InventoryItem
	connection  client.Connection
	reservation client.Reservation
}

type step func(context.Context, *triggerRun) error

func createProduct(ctx context.Context, t *triggerRun) error {
	slug := "trigger-" + t.suffix
	p, _, err := t.c.CreateProduct(ctx, client.CreateProductRequest{VendorID: t.vendor, Body: client.ProductCreate{Kind: "simple", Name: "Trigger " + t.suffix, Slug: slug,
		Description: "Made by local trigger.", Price: 1000, Category: "demo", Subcategory: "trigger",
		ImageURLs: []string{"https://cdn.example.com/trigger.jpg"}, Options: map[string][]string{}, Features: []string{}, RelatedProductIDs: []string{}, WeightKg: 0.1}})
	if err != nil {
		return err
	}
	t.product = p
	fmt.Fprintf(t.out, "Created product %s (product.created)\n", p.ID)
	for it, err := range t.c.AllInventoryItems(ctx, client.ListInventoryItemsRequest{VendorID: t.vendor, Limit: 100}) {
		if err != nil {
			return err
		}
		if it.ProductID == p.ID {
			t.item = it
		}
	}
	return nil
}

func productStep(action, event string) step {
	return func(ctx context.Context, t *triggerRun) error {
		req := client.PublishProductRequest{VendorID: t.vendor, ProductID: t.product.ID, Body: client.ProductTransition{ExpectedRevision: t.product.Revision}}
		var p client.Product
		var err error
		switch action {
		case "publish":
			p, _, err = t.c.PublishProduct(ctx, req)
		case "unpublish":
			p, _, err = t.c.UnpublishProduct(ctx, client.UnpublishProductRequest(req))
		case "archive":
			p, _, err = t.c.ArchiveProduct(ctx, client.ArchiveProductRequest(req))
		default:
			p, _, err = t.c.RestoreProduct(ctx, client.RestoreProductRequest(req))
		}
		if err != nil {
			return err
		}
		t.product = p
		fmt.Fprintf(t.out, "%s product %s (%s)\n", strings.ToUpper(action[:1])+action[1:], p.ID, event)
		return nil
	}
}

func adjust(ctx context.Context, t *triggerRun) error {
	it, _, err := t.c.AdjustInventoryItem(ctx, client.AdjustInventoryItemRequest{VendorID: t.vendor, InventoryItemID: t.item.ID,
		Body: client.Adjustment{TargetOnHand: t.item.OnHand + 10, ExpectedVersion: t.item.Version}})
	if err != nil {
		return err
	}
	t.item = it
	fmt.Fprintf(t.out, "Adjusted inventory item %s to on_hand %d (inventory_item.adjusted)\n", it.ID, it.OnHand)
	return nil
}

func createConnection(ctx context.Context, t *triggerRun) error {
	var roles client.ConnectionCreateRoles
	if err := roles.FromRoles(client.Roles{Catalog: "destination", BasePrice: "destination", Inventory: "destination",
		OrderIngress: "disabled", ExternalOrderFulfillment: "moku"}); err != nil {
		return err
	}
	conn, _, err := t.c.CreateConnection(ctx, client.CreateConnectionRequest{VendorID: t.vendor, Body: client.ConnectionCreate{Provider: "marketplace_a", ExternalAccountID: "trigger-" + t.suffix,
		DisplayName: "Trigger " + t.suffix, Roles: roles}})
	if err != nil {
		return err
	}
	t.connection = conn
	fmt.Fprintf(t.out, "Created connection %s (connection.created)\n", conn.ID)
	return nil
}

func connectionStep(action, event string) step {
	return func(ctx context.Context, t *triggerRun) error {
		req := client.PauseConnectionRequest{VendorID: t.vendor, ConnectionID: t.connection.ID, Body: client.VersionBody{ExpectedVersion: t.connection.Version}}
		var conn client.Connection
		var err error
		switch action {
		case "pause":
			conn, _, err = t.c.PauseConnection(ctx, req)
		case "resume":
			conn, _, err = t.c.ResumeConnection(ctx, client.ResumeConnectionRequest(req))
		default:
			conn, _, err = t.c.DisconnectConnection(ctx, client.DisconnectConnectionRequest(req))
		}
		if err != nil {
			return err
		}
		t.connection = conn
		fmt.Fprintf(t.out, "%s connection %s (%s)\n", strings.ToUpper(action[:1])+action[1:], conn.ID, event)
		return nil
	}
}

func reserve(ctx context.Context, t *triggerRun) error {
	r, _, err := t.c.CreateReservation(ctx, client.CreateReservationRequest{VendorID: t.vendor,
		Body: client.ReservationCreate{ConnectionID: t.connection.ID, InventoryItemID: t.item.ID, Quantity: 1, ExpiresInSeconds: new(int64(900))}})
	if err != nil {
		return err
	}
	t.reservation = r
	fmt.Fprintf(t.out, "Created reservation %s (reservation.created)\n", r.ID)
	return nil
}

func reservationStep(action, event string) step {
	return func(ctx context.Context, t *triggerRun) error {
		v := client.VersionBody{ExpectedVersion: t.reservation.Version}
		var r client.Reservation
		var err error
		switch action {
		case "renew":
			r, _, err = t.c.RenewReservation(ctx, client.RenewReservationRequest{VendorID: t.vendor, ReservationID: t.reservation.ID,
				Body: client.ReservationRenew{ExpectedVersion: t.reservation.Version}})
		case "commit":
			r, _, err = t.c.CommitReservation(ctx, client.CommitReservationRequest{VendorID: t.vendor, ReservationID: t.reservation.ID, Body: v})
		default:
			r, _, err = t.c.ReleaseReservation(ctx, client.ReleaseReservationRequest{VendorID: t.vendor, ReservationID: t.reservation.ID, Body: v})
		}
		if err != nil {
			return err
		}
		t.reservation = r
		fmt.Fprintf(t.out, "%s reservation %s (%s)\n", strings.ToUpper(action[:1])+action[1:], r.ID, event)
		return nil
	}
}

// triggerPlan lists the changes that write typ last (nil: not one trigger
// makes).
func triggerPlan(typ string) []step {
	product := []step{createProduct}
	stocked := []step{createProduct, adjust, createConnection, reserve}
	conn := []step{createConnection}
	switch typ {
	case "product.created":
		return product
	case "product.published":
		return append(product, productStep("publish", typ))
	case "product.unpublished":
		return append(product, productStep("publish", "product.published"), productStep("unpublish", typ))
	case "product.archived":
		return append(product, productStep("archive", typ))
	case "product.restored":
		return append(product, productStep("archive", "product.archived"), productStep("restore", typ))
	case "inventory_item.adjusted":
		return append(product, adjust)
	case "connection.created":
		return conn
	case "connection.paused":
		return append(conn, connectionStep("pause", typ))
	case "connection.resumed":
		return append(conn, connectionStep("pause", "connection.paused"), connectionStep("resume", typ))
	case "connection.disconnected":
		return append(conn, connectionStep("disconnect", typ))
	case "reservation.created":
		return stocked
	case "reservation.renewed":
		return append(stocked, reservationStep("renew", typ))
	case "reservation.committed":
		return append(stocked, reservationStep("commit", typ))
	case "reservation.released":
		return append(stocked, reservationStep("release", typ))
	}
	return nil
}

// triggerTypes lists what trigger makes, in triggerPlan's order.
func triggerTypes() []string {
	return []string{
		"product.created", "product.published", "product.unpublished", "product.archived", "product.restored",
		"inventory_item.adjusted",
		"connection.created", "connection.paused", "connection.resumed", "connection.disconnected",
		"reservation.created", "reservation.renewed", "reservation.committed", "reservation.released",
	}
}
