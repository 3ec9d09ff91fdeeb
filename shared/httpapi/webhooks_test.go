package httpapi_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook"
)

// publicHosts is what host names resolve to in these tests: the webhook
// package's resolver hook keeps them off the network.
var publicHosts = webhook.Hosts{
	"hooks.example.com":    {netip.MustParseAddr("93.184.216.34")},
	"other.example.com":    {netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946")},
	"internal.example.com": {netip.MustParseAddr("10.1.2.3")},
	"rebind.example.com":   {netip.MustParseAddr("93.184.216.34")},
	"metadata.example.com": {netip.MustParseAddr("169.254.169.254")},
	"loop6.example.com":    {netip.MustParseAddr("::1")},
	"localhost":            {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	"lan.example.com":      {netip.MustParseAddr("192.168.1.20")},
	"corp.example.com":     {netip.MustParseAddr("172.16.5.4")},
}

func webhookEnv(t *testing.T, kind apitest.StoreKind, allowPrivate bool) *apitest.Env {
	t.Helper()
	return webhookEnvResolving(t, kind, allowPrivate, publicHosts)
}

// webhookEnvResolving is webhookEnv with host names resolving through hosts.
func webhookEnvResolving(t *testing.T, kind apitest.StoreKind, allowPrivate bool, hosts webhook.Hosts) *apitest.Env {
	t.Helper()
	e := apitest.New(t, apitest.Options{Store: kind, WebhookResolver: hosts, Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
		c.AllowPrivateWebhooks = allowPrivate
	}})
	e.Clock.Tick(time.Millisecond)
	return e
}

type subscriptionBody struct {
	Data struct {
		ID             string
		VendorID       string `json:"vendor_id"`
		URL            string
		EventTypes     []string `json:"event_types"`
		Description    *string
		Status         string
		DisabledReason *string `json:"disabled_reason"`
		Version        int64
		Secret         string
	}
}

func subsPath(e *apitest.Env) string { return "/vendors/" + e.Vendor.ID + "/webhook-subscriptions" }

func createSubscription(t *testing.T, e *apitest.Env, key string, body any) (*apitest.Resp, subscriptionBody) {
	t.Helper()
	return apitest.Create[subscriptionBody](t, e, subsPath(e), key, body)
}

func mustSubscribe(t *testing.T, e *apitest.Env, url string, types ...string) subscriptionBody {
	t.Helper()
	r, s := createSubscription(t, e, fmt.Sprintf("sub-%d-%s", time.Now().UnixNano(), strings.ReplaceAll(types[0], "*", "all")),
		map[string]any{"url": url, "event_types": types})
	if r.Status != 201 {
		t.Fatalf("subscribe %s: %d %s", url, r.Status, r.Body)
	}
	return s
}

func patchSubscription(e *apitest.Env, id string, body any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPatch, Path: subsPath(e) + "/" + id, Token: e.Token, Body: body})
}

func TestWebhookSubscriptionLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, false)
		body := map[string]any{"url": "https://hooks.example.com/moku", "event_types": []string{"product.created", "inventory_item.adjusted"},
			"description": "ERP sync"}
		r, s := createSubscription(t, e, "sub.key:0001", body)
		d := s.Data
		if r.Status != 201 || d.Status != "enabled" || d.Version != 1 || d.VendorID != e.Vendor.ID || d.DisabledReason != nil ||
			!strings.HasPrefix(d.Secret, "whsec_") || len(d.Secret) != len("whsec_")+52 || *d.Description != "ERP sync" {
			t.Fatalf("created: %d %s", r.Status, r.Body)
		}
		// An exact replay answers with the original, secret included.
		replay, _ := createSubscription(t, e, "sub.key:0001", body)
		if string(replay.Body) != string(r.Body) || replay.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %s", replay.Body)
		}
		other := map[string]any{"url": "https://other.example.com/", "event_types": []string{"*"}}
		again, _ := createSubscription(t, e, "sub.key:0001", other)
		again.WantProblem(t, 409, "IDEMPOTENCY_KEY_REUSED")
		r, _ = createSubscription(t, e, "bad key!", other)
		r.WantProblem(t, 400, "IDEMPOTENCY_KEY_INVALID")
		r = e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e), Token: e.Token, Body: other})
		r.WantProblem(t, 400, "IDEMPOTENCY_KEY_REQUIRED")

		// Reads never show the secret.
		g := e.Get(subsPath(e) + "/" + d.ID)
		if g.Status != 200 || strings.Contains(string(g.Body), "secret") || strings.Contains(string(g.Body), d.Secret) {
			t.Fatalf("get: %d %s", g.Status, g.Body)
		}
		second := mustSubscribe(t, e, "https://other.example.com:443/in", "*")
		var list struct {
			Data []map[string]any
			Page struct {
				NextCursor *string `json:"next_cursor"`
			}
		}
		l := e.Get(subsPath(e) + "?limit=1")
		l.JSON(t, &list)
		if len(list.Data) != 1 || list.Data[0]["id"] != d.ID || list.Page.NextCursor == nil || strings.Contains(string(l.Body), "whsec_") {
			t.Fatalf("page 1: %s", l.Body)
		}
		l = e.Get(subsPath(e) + "?limit=1&page_after=" + *list.Page.NextCursor)
		l.JSON(t, &list)
		if len(list.Data) != 1 || list.Data[0]["id"] != second.Data.ID || list.Page.NextCursor != nil {
			t.Fatalf("page 2: %s", l.Body)
		}
		e.Get(subsPath(e)+"?page_after=nonsense").WantProblem(t, 400, "INVALID_CURSOR")
		e.Get(subsPath(e)+"/whsub_missing").WantProblem(t, 404, "NOT_FOUND")

		// PATCH changes what is sent, under expected_version.
		patchSubscription(e, d.ID, map[string]any{"expected_version": 7, "status": "disabled"}).WantProblem(t, 409, "WEBHOOK_SUBSCRIPTION_VERSION_CONFLICT")
		patchSubscription(e, d.ID, map[string]any{"status": "disabled"}).WantProblem(t, 400, "INVALID_REQUEST")
		patchSubscription(e, d.ID, map[string]any{"expected_version": 1, "secret": "whsec_mine"}).WantProblem(t, 400, "INVALID_REQUEST")
		p := patchSubscription(e, d.ID, map[string]any{"expected_version": 1, "status": "disabled", "description": nil})
		var u subscriptionBody
		p.JSON(t, &u)
		if p.Status != 200 || u.Data.Status != "disabled" || *u.Data.DisabledReason != "vendor" || u.Data.Version != 2 || u.Data.Description != nil ||
			u.Data.URL != d.URL || len(u.Data.EventTypes) != 2 || u.Data.Secret != "" {
			t.Fatalf("patch: %d %s", p.Status, p.Body)
		}
		// The same values again change nothing.
		p = patchSubscription(e, d.ID, map[string]any{"expected_version": 2, "status": "disabled"})
		p.JSON(t, &u)
		if p.Status != 200 || u.Data.Version != 2 {
			t.Fatalf("no-op patch: %d %s", p.Status, p.Body)
		}
		p = patchSubscription(e, d.ID, map[string]any{"expected_version": 2, "status": "enabled", "event_types": []string{"*"}, "url": "https://other.example.com/v2"})
		p.JSON(t, &u)
		if p.Status != 200 || u.Data.Status != "enabled" || u.Data.DisabledReason != nil || u.Data.Version != 3 || u.Data.URL != "https://other.example.com/v2" {
			t.Fatalf("re-enable: %d %s", p.Status, p.Body)
		}

		// Rotation shows a new secret once and moves the version.
		rot := e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e) + "/" + d.ID + "/rotate-secret", Token: e.Token})
		var rs subscriptionBody
		rot.JSON(t, &rs)
		if rot.Status != 200 || !strings.HasPrefix(rs.Data.Secret, "whsec_") || rs.Data.Secret == d.Secret || rs.Data.Version != 4 {
			t.Fatalf("rotate: %d %s", rot.Status, rot.Body)
		}
		e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e) + "/" + d.ID + "/rotate-secret", Token: e.Token,
			Body: map[string]any{"expected_version": 4}}).WantProblem(t, 400, "INVALID_REQUEST")

		// Scopes: reading needs webhooks.read, writing webhooks.write.
		reader := e.NewToken(e.Vendor.ID, auth.WebhooksRead)
		if r := e.Do(apitest.Req{Path: subsPath(e), Token: reader}); r.Status != 200 {
			t.Fatalf("read with webhooks.read: %d", r.Status)
		}
		e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e), Token: reader, Body: other,
			Headers: map[string]string{"Idempotency-Key": "reader-key-1"}}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + d.ID, Token: reader}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		writer := e.NewToken(e.Vendor.ID, auth.WebhooksWrite)
		e.Do(apitest.Req{Path: subsPath(e) + "/" + d.ID, Token: writer}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")

		// Delete.
		del := e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + d.ID, Token: e.Token})
		if del.Status != 200 || !strings.Contains(string(del.Body), `"deleted":true`) {
			t.Fatalf("delete: %d %s", del.Status, del.Body)
		}
		e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + d.ID, Token: e.Token}).WantProblem(t, 404, "NOT_FOUND")
		e.Get(subsPath(e)+"/"+d.ID).WantProblem(t, 404, "NOT_FOUND")
		e.Get(subsPath(e)+"/"+d.ID+"/deliveries").WantProblem(t, 404, "NOT_FOUND")

		// Every change is in the event log.
		got := strings.Join(eventTypes(t, e), " ")
		for _, want := range []string{"webhook_subscription.created", "webhook_subscription.updated", "webhook_subscription.deleted"} {
			if !strings.Contains(got, want) {
				t.Errorf("events %s lack %s", got, want)
			}
		}
	})
}

func TestWebhookSubscriptionLimits(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, false)
		var first string
		for i := 0; i < webhook.MaxSubscriptions; i++ {
			r, s := createSubscription(t, e, fmt.Sprintf("limit-key-%02d", i), map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "event_types": []string{"*"}})
			if r.Status != 201 {
				t.Fatalf("subscription %d: %d %s", i, r.Status, r.Body)
			}
			if i == 0 {
				first = s.Data.ID
			}
		}
		r, _ := createSubscription(t, e, "limit-key-20", map[string]any{"url": "https://hooks.example.com/20", "event_types": []string{"*"}})
		r.WantProblem(t, 409, "WEBHOOK_SUBSCRIPTION_LIMIT")
		if r := e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + first, Token: e.Token}); r.Status != 200 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		r, _ = createSubscription(t, e, "limit-key-21", map[string]any{"url": "https://hooks.example.com/21", "event_types": []string{"*"}})
		if r.Status != 201 {
			t.Fatalf("after a delete: %d %s", r.Status, r.Body)
		}

		thirty := []string{}
		for len(thirty) < 30 {
			thirty = append(thirty, fmt.Sprintf("t%d", len(thirty)))
		}
		bad := []struct {
			name  string
			types any
			field string
		}{
			{"none", []string{}, "event_types"},
			{"missing", nil, "event_types"},
			{"31 types", append(thirty, "x"), "event_types"},
			{"unknown type", []string{"product.created", "product.exploded"}, "event_types[1]"},
			{"star with others", []string{"*", "product.created"}, "event_types"},
			{"repeated", []string{"product.created", "product.created"}, "event_types"},
			{"not strings", []int{1}, "event_types[0]"},
		}
		for i, tc := range bad {
			b := map[string]any{"url": "https://hooks.example.com/x"}
			if tc.types != nil {
				b["event_types"] = tc.types
			}
			r, _ := createSubscription(t, e, fmt.Sprintf("types-key-%02d", i), b)
			if p := r.WantProblem(t, 400, "INVALID_REQUEST"); !strings.HasPrefix(p.Detail, tc.field+":") {
				t.Errorf("%s: detail %q, want it to start with %s", tc.name, p.Detail, tc.field)
			}
		}
		// The types the service emits, all 30 at once, are accepted (after freeing a place).
		e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + mustList(t, e)[0], Token: e.Token})
		types := []string{"product.created", "product.updated", "product.published", "product.unpublished", "product.archived",
			"product.restored", "inventory_item.adjusted", "connection.created", "connection.paused", "connection.resumed",
			"connection.disconnected", "connection.roles_replaced", "reservation.created", "reservation.renewed",
			"reservation.committed", "reservation.released", "reservation.expired", "webhook_subscription.created",
			"webhook_subscription.updated", "webhook_subscription.deleted", "webhook_subscription.disabled", "event_replay.completed"}
		if r, _ := createSubscription(t, e, "types-key-ok", map[string]any{"url": "https://hooks.example.com/all", "event_types": types}); r.Status != 201 {
			t.Fatalf("%d known types: %d %s", len(types), r.Status, r.Body)
		}
		r, _ = createSubscription(t, e, "desc-key-1", map[string]any{"url": "https://hooks.example.com/d", "event_types": []string{"*"}, "description": strings.Repeat("d", 501)})
		r.WantProblem(t, 400, "INVALID_REQUEST")
	})
}

func mustList(t *testing.T, e *apitest.Env) []string {
	t.Helper()
	var list struct{ Data []struct{ ID string } }
	e.Get(subsPath(e)+"?limit=100").JSON(t, &list)
	var ids []string
	for _, s := range list.Data {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestWebhookURLRefusals: only public HTTPS endpoints on port 443, checked
// on the literal address and on what a name resolves to.
func TestWebhookURLRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, false)
		refused := []string{
			"https://127.0.0.1/hook",           // IPv4 loopback
			"https://10.0.0.1/hook",            // IPv4 private
			"https://172.16.5.4/hook",          // IPv4 private
			"https://192.168.1.10/hook",        // IPv4 private
			"https://169.254.169.254/latest",   // IPv4 link-local (cloud metadata)
			"https://100.64.0.1/hook",          // carrier-grade NAT
			"https://198.18.0.1/hook",          // benchmarking
			"https://192.0.2.1/hook",           // documentation
			"https://224.0.0.1/hook",           // multicast
			"https://0.0.0.0/hook",             // unspecified
			"https://[::1]/hook",               // IPv6 loopback
			"https://[fe80::1]/hook",           // IPv6 link-local
			"https://[fc00::1]/hook",           // IPv6 unique local
			"https://[::ffff:127.0.0.1]/hook",  // IPv4-mapped IPv6
			"https://[::ffff:7f00:1]/hook",     // the same, in hex
			"https://2130706433/hook",          // decimal 127.0.0.1
			"https://0177.0.0.1/hook",          // octal 127.0.0.1
			"https://0x7f000001/hook",          // hex 127.0.0.1
			"https://0x7f.1/hook",              // mixed short form
			"https://127.1/hook",               // short form
			"http://hooks.example.com/hook",    // plain http
			"https://hooks.example.com:80/",    // port 80
			"https://hooks.example.com:8443/",  // port 8443
			"https://u:p@hooks.example.com/",   // user info
			"https://hooks.example.com/#top",   // fragment
			"https://localhost/hook",           // localhost
			"https://internal.example.com/",    // a name resolving to a private address
			"https://metadata.example.com/",    // a name resolving to link-local
			"https://loop6.example.com/",       // a name resolving to ::1
			"https://missing.example.com/hook", // a name that does not resolve
		}
		for i, u := range refused {
			r, _ := createSubscription(t, e, fmt.Sprintf("ssrf-key-%02d", i), map[string]any{"url": u, "event_types": []string{"*"}})
			if p := r.WantProblem(t, 400, "WEBHOOK_URL_NOT_ALLOWED"); !strings.HasPrefix(p.Detail, "url: ") {
				t.Errorf("%s: detail %q", u, p.Detail)
			}
		}
		// A name is refused by the rule, never by what it resolved to: the
		// detail is the same for a name without addresses.
		for _, name := range []string{"internal", "metadata", "loop6", "lan", "corp", "missing"} {
			host := name + ".example.com"
			r, _ := createSubscription(t, e, "ssrf-name-"+name, map[string]any{"url": "https://" + host + "/hook", "event_types": []string{"*"}})
			p := r.WantProblem(t, 400, "WEBHOOK_URL_NOT_ALLOWED")
			if want := "url: the host " + host + " must resolve, and only to public addresses"; p.Detail != want {
				t.Errorf("%s: detail %q, want %q", host, p.Detail, want)
			}
			for _, a := range publicHosts[host] {
				if strings.Contains(string(r.Body), a.String()) {
					t.Errorf("%s: the refusal names %s, what the name resolved to: %s", host, a, r.Body)
				}
			}
		}
		if ids := mustList(t, e); len(ids) != 0 {
			t.Fatalf("refused URLs left subscriptions %v", ids)
		}
		// Accepted: a public name, an explicit :443, a public literal.
		s := mustSubscribe(t, e, "https://hooks.example.com:443/hook", "*")
		mustSubscribe(t, e, "https://93.184.216.34/hook", "*")
		mustSubscribe(t, e, "https://[2606:4700:4700::1111]/hook", "*")
		// An update is checked the same way, and changes nothing when refused.
		patchSubscription(e, s.Data.ID, map[string]any{"expected_version": 1, "url": "https://internal.example.com/"}).WantProblem(t, 400, "WEBHOOK_URL_NOT_ALLOWED")
		patchSubscription(e, s.Data.ID, map[string]any{"expected_version": 1, "url": "https://[::ffff:10.0.0.1]/"}).WantProblem(t, 400, "WEBHOOK_URL_NOT_ALLOWED")
		var g subscriptionBody
		e.Get(subsPath(e)+"/"+s.Data.ID).JSON(t, &g)
		if g.Data.URL != "https://hooks.example.com:443/hook" || g.Data.Version != 1 {
			t.Fatalf("after refused updates: %+v", g.Data)
		}
	})
}

// Under --allow-private-webhooks, local receivers are allowed: plain http,
// any port, loopback. Every other private address stays refused, whether
// written as a literal or reached through a name (checked through the
// test resolver: no traffic leaves loopback).
func TestWebhookURLsUnderTheLocalFlag(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	for _, u := range []string{"http://127.0.0.1:8081/hook", "http://localhost:3000/", "https://[::1]:8443/x", "http://loop6.example.com:9000/", "https://hooks.example.com/x"} {
		mustSubscribe(t, e, u, "*")
	}
	for i, u := range []string{"http://u:p@127.0.0.1:8081/", "http://10.0.0.8:8080/", "http://172.16.0.1/", "http://192.168.1.20/",
		"http://169.254.169.254/latest", "http://[fd00::1]/", "http://internal.example.com/", "http://lan.example.com:8080/",
		"http://corp.example.com/", "http://metadata.example.com/"} {
		r, _ := createSubscription(t, e, fmt.Sprintf("local-key-%d", i), map[string]any{"url": u, "event_types": []string{"*"}})
		r.WantProblem(t, 400, "WEBHOOK_URL_NOT_ALLOWED")
	}
}

// The count of subscriptions is kept with a bound in the same transaction
// as each create, so racing creates cannot pass the limit.
func TestWebhookSubscriptionLimitUnderConcurrency(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, false)
		const n = webhook.MaxSubscriptions + 6
		rs := apitest.Race(n, func(i int) *apitest.Resp {
			return e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: subsPath(e), Token: e.Token,
				Body:    map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "event_types": []string{"*"}},
				Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("race-key-%02d", i)}})
		})
		statuses := apitest.Statuses(rs)
		created := statuses[201]
		if created+statuses[409] != n {
			t.Fatalf("statuses %v, want only 201 and 409", statuses)
		}
		// Creates that lost a race may be retried; the limit still holds.
		for i := 0; i < n && created < webhook.MaxSubscriptions; i++ {
			if rs[i].Status == 409 {
				if r, _ := createSubscription(t, e, fmt.Sprintf("race-key-%02d", i), map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "event_types": []string{"*"}}); r.Status == 201 {
					created++
				}
			}
		}
		listed := len(mustList(t, e))
		if created != webhook.MaxSubscriptions || listed != created {
			t.Fatalf("created %d, listed %d, want %d", created, listed, webhook.MaxSubscriptions)
		}
		r, _ := createSubscription(t, e, "race-key-last", map[string]any{"url": "https://hooks.example.com/last", "event_types": []string{"*"}})
		r.WantProblem(t, 409, "WEBHOOK_SUBSCRIPTION_LIMIT")
	})
}
