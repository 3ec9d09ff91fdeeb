package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/client"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// exchange is one answer the client read.
type exchange struct {
	route  string // "GET /vendors/ven_1"
	status int
	body   []byte
}

// recorder keeps every answer the client reads.
type recorder struct {
	mu   sync.Mutex
	seen []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, exchange{req.Method + " " + strings.TrimPrefix(req.URL.Path, "/v1"), res.StatusCode, b})
	return res, nil
}

// shapes names, per route ({} is any one segment), the generated type the
// client decodes the answer's data into; nil for an answer it does not
// read.
var shapes = []struct {
	route string
	check func(*testing.T, []byte)
}{
	{"GET /vendors", decodesExactly[[]client.Vendor]},
	{"GET /vendors/{}", decodesExactly[client.Vendor]},
	{"POST /vendors/{}/products", decodesExactly[client.Product]},
	{"GET /vendors/{}/products", decodesExactly[[]client.Product]},
	{"GET /vendors/{}/products/{}", decodesExactly[client.Product]},
	{"POST /vendors/{}/products/{}/{}", decodesExactly[client.Product]},
	{"GET /vendors/{}/inventory-items", decodesExactly[[]client.InventoryItem]},
	{"GET /vendors/{}/inventory-items/{}", decodesExactly[client.InventoryItem]},
	{"POST /vendors/{}/inventory-items/{}/adjustments", decodesExactly[client.InventoryItem]},
	{"POST /vendors/{}/connections", decodesExactly[client.Connection]},
	{"GET /vendors/{}/connections", decodesExactly[[]client.Connection]},
	{"POST /vendors/{}/connections/{}/{}", decodesExactly[client.Connection]},
	{"POST /vendors/{}/inventory-reservations", decodesExactly[client.Reservation]},
	{"POST /vendors/{}/inventory-reservations/{}/{}", decodesExactly[client.Reservation]},
	{"GET /vendors/{}/events", decodesExactly[[]client.Event]},
	{"GET /vendors/{}/events/{}", decodesExactly[client.Event]},
	{"POST /vendors/{}/webhook-subscriptions", decodesExactly[client.WebhookSubscriptionWithSecret]},
	{"GET /vendors/{}/webhook-subscriptions", decodesExactly[[]client.WebhookSubscription]},
	{"DELETE /vendors/{}/webhook-subscriptions/{}", decodesExactly[client.DeletedResource]},
}

// matches reports whether route fits pattern.
func matches(pattern, route string) bool {
	p, r := strings.Split(pattern, "/"), strings.Split(route, "/")
	if len(p) != len(r) {
		return false
	}
	for i := range p {
		if p[i] != "{}" && p[i] != r[i] {
			return false
		}
	}
	return true
}

// checkEvery decodes every recorded answer strictly: a success into its
// route's type, a failure into Problem; every route of shapes must have
// been taken.
func (r *recorder) checkEvery(t *testing.T) {
	t.Helper()
	taken := map[string]bool{}
	for _, x := range r.seen {
		if x.status >= 400 {
			var p client.Problem
			dec := json.NewDecoder(bytes.NewReader(x.body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil || p.Status != int64(x.status) {
				t.Errorf("%s: the problem %s does not decode as Problem: %v", x.route, x.body, err)
			}
			continue
		}
		i := slices.IndexFunc(shapes, func(s struct {
			route string
			check func(*testing.T, []byte)
		}) bool {
			return matches(s.route, x.route)
		})
		if i < 0 {
			t.Errorf("%s: no type names its answer in shapes", x.route)
			continue
		}
		taken[shapes[i].route] = true
		if shapes[i].check != nil {
			t.Run(shapes[i].route, func(t *testing.T) { shapes[i].check(t, x.body) })
		}
	}
	for _, s := range shapes {
		if !taken[s.route] {
			t.Errorf("%s: not taken", s.route)
		}
	}
}

// decodesExactly checks that a real answer decodes into T with no field
// the type lacks, and that T writes it back with nothing lost or added:
// the generated type and the server agree on every field.
func decodesExactly[T any](t *testing.T, body []byte) {
	t.Helper()
	var v struct {
		Data T            `json:"data"`
		Page *client.Page `json:"page,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%T does not decode the answer: %v\n%s", v.Data, err, body)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want, got := canonical(t, body), canonical(t, again); !reflect.DeepEqual(want, got) {
		t.Fatalf("%T does not write back what it read:\nserver %s\nclient %s", v.Data, body, again)
	}
}

func canonical(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTypesMatchTheServer runs every operation the client has against
// the API and decodes each answer strictly into the generated type the
// client returns: a field the document lacks, or one it names that the
// server does not send as described, fails here.
func TestTypesMatchTheServer(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) { typesMatchTheServer(t, kind) })
	}
}

func typesMatchTheServer(t *testing.T, kind apitest.StoreKind) {
	e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.AllowPrivateWebhooks = true }})
	ctx := context.Background()
	rec := &recorder{}
	c := client.New(e.URL, e.Token, client.WithHTTPClient(&http.Client{Transport: rec}))
	v := e.Vendor.ID
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	_, _, err := c.ListVendors(ctx)
	must(err)
	_, _, err = c.GetVendor(ctx, client.GetVendorRequest{VendorID: v})
	must(err)
	in := shirt("typed-shirt")
	in.Badge, in.OriginalPrice, in.SKU, in.Tags = new(client.ProductBadgeSale), new(int64(5000)), new("SHIRT-1"), []string{"linen"}
	p, _, err := c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: in})
	must(err)
	variable := shirt("typed-variable")
	variable.Kind, variable.Options = client.ProductKindVariable, map[string][]string{"size": {"S", "M"}}
	variable.Variations = []client.NewVariationInput{{Options: map[string]string{"size": "S"}, Price: 4500},
		{Options: map[string]string{"size": "M"}, Price: 4700, SKU: new("SHIRT-M")}}
	_, _, err = c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: variable})
	must(err)
	p, _, err = c.PublishProduct(ctx, client.PublishProductRequest{VendorID: v, ProductID: p.ID, Body: client.ProductTransition{ExpectedRevision: p.Revision}})
	must(err)
	_, _, err = c.GetProduct(ctx, client.GetProductRequest{VendorID: v, ProductID: p.ID})
	must(err)
	var item client.InventoryItem
	for it, err := range c.AllInventoryItems(ctx, client.ListInventoryItemsRequest{VendorID: v}) {
		must(err)
		if it.ProductID == p.ID {
			item = it
		}
	}
	item, _, err = c.AdjustInventoryItem(ctx, client.AdjustInventoryItemRequest{VendorID: v, InventoryItemID: item.ID, Body: client.Adjustment{TargetOnHand: 5, ExpectedVersion: item.Version}})
	must(err)
	_, _, err = c.GetInventoryItem(ctx, client.GetInventoryItemRequest{VendorID: v, InventoryItemID: item.ID})
	must(err)

	var roles client.ConnectionCreateRoles
	must(roles.FromRolePreset(client.RolePresetServiceSource))
	conn, _, err := c.CreateConnection(ctx, client.CreateConnectionRequest{VendorID: v,
		Body: client.ConnectionCreate{Provider: client.ConnectionProviderStorePlugin, ExternalAccountID: "shop-1", DisplayName: "Web store", Roles: roles}})
	must(err)
	must(roles.FromRoles(client.Roles{Catalog: "destination", BasePrice: "destination", Inventory: "destination", OrderIngress: "disabled", ExternalOrderFulfillment: "moku"}))
	other, _, err := c.CreateConnection(ctx, client.CreateConnectionRequest{VendorID: v,
		Body: client.ConnectionCreate{Provider: "marketplace_a", ExternalAccountID: "acct-1", DisplayName: "Marketplace", Roles: roles}})
	if err != nil || other.Roles.Catalog != client.DomainRoleDestination {
		t.Fatalf("roles sent as a Roles value: %+v %v", other.Roles, err)
	}
	_, _, err = c.PauseConnection(ctx, client.PauseConnectionRequest{VendorID: v, ConnectionID: other.ID, Body: client.VersionBody{ExpectedVersion: other.Version}})
	must(err)
	r, _, err := c.CreateReservation(ctx, client.CreateReservationRequest{VendorID: v,
		Body: client.ReservationCreate{ConnectionID: conn.ID, InventoryItemID: item.ID, Quantity: 1, Reference: new("cart-1")}})
	must(err)
	_, _, err = c.CommitReservation(ctx, client.CommitReservationRequest{VendorID: v, ReservationID: r.ID, Body: client.VersionBody{ExpectedVersion: r.Version}})
	must(err)
	sub, _, err := c.CreateWebhookSubscription(ctx, client.CreateWebhookSubscriptionRequest{VendorID: v,
		Body: client.WebhookSubscriptionCreate{URL: new(e.URL + "/hooks"), EventTypes: []string{"*"}, Description: new("types test")}})
	must(err)
	_, _, err = c.DeleteWebhookSubscription(ctx, client.DeleteWebhookSubscriptionRequest{VendorID: v, SubscriptionID: sub.ID})
	must(err)

	var last client.Event
	for _, list := range []iter.Seq2[any, error]{anyOf(c.AllProducts(ctx, client.ListProductsRequest{VendorID: v})),
		anyOf(c.AllConnections(ctx, client.ListConnectionsRequest{VendorID: v})),
		anyOf(c.AllWebhookSubscriptions(ctx, client.ListWebhookSubscriptionsRequest{VendorID: v}))} {
		for _, err := range list {
			must(err)
		}
	}
	for ev, err := range c.AllEvents(ctx, client.ListEventsRequest{VendorID: v, Limit: 100}) {
		must(err)
		last = ev
	}
	_, _, err = c.GetEvent(ctx, client.GetEventRequest{VendorID: v, EventID: last.ID})
	must(err)
	if _, _, err := c.GetProduct(ctx, client.GetProductRequest{VendorID: v, ProductID: "prd_missing"}); !client.IsCode(err, client.ErrorCodeNotFound) {
		t.Fatalf("missing product: %v", err)
	}
	rec.checkEvery(t)
}

// anyOf iterates seq's items as any.
func anyOf[T any](seq iter.Seq2[T, error]) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for v, err := range seq {
			if !yield(v, err) {
				return
			}
		}
	}
}
