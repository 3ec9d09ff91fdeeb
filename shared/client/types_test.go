package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/client"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// recorder keeps the body of every answer the client reads.
type recorder struct {
	mu     sync.Mutex
	bodies map[string][]byte // by "METHOD /path", the latest
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
	r.bodies[req.Method+" "+req.URL.Path] = b
	return res, nil
}

// answer is the latest body of method on a path ending in suffix.
func (r *recorder) answer(t *testing.T, method, suffix string) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, b := range r.bodies {
		if strings.HasPrefix(k, method+" ") && strings.HasSuffix(k, suffix) {
			return b
		}
	}
	t.Fatalf("no answer to %s ...%s recorded", method, suffix)
	return nil
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
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(hooks.Close)
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) { c.AllowPrivateWebhooks = true }})
	ctx := context.Background()
	rec := &recorder{bodies: map[string][]byte{}}
	c := client.New(e.URL, e.Token, client.WithHTTPClient(&http.Client{Transport: rec}))
	v := e.Vendor.ID
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	_, err := c.ListVendors(ctx)
	must(err)
	decodesExactly[[]client.Vendor](t, rec.answer(t, "GET", "/vendors"))
	_, err = c.GetVendor(ctx, v)
	must(err)
	decodesExactly[client.Vendor](t, rec.answer(t, "GET", "/vendors/"+v))

	in := shirt("typed-shirt")
	in.Badge, in.OriginalPrice, in.SKU, in.Tags = new(client.ProductCreateBadgeSale), new(int64(5000)), new("SHIRT-1"), []string{"linen"}
	p, _, err := c.CreateProduct(ctx, v, in)
	must(err)
	decodesExactly[client.Product](t, rec.answer(t, "POST", "/products"))
	variable := shirt("typed-variable")
	variable.Kind, variable.Options = client.ProductCreateKindVariable, map[string][]string{"size": {"S", "M"}}
	variable.Variations = []client.NewVariationInput{{Options: map[string]string{"size": "S"}, Price: 4500}, {Options: map[string]string{"size": "M"}, Price: 4700, SKU: new("SHIRT-M")}}
	_, _, err = c.CreateProduct(ctx, v, variable)
	must(err)
	decodesExactly[client.Product](t, rec.answer(t, "POST", "/products"))
	_, err = c.GetProduct(ctx, v, p.ID)
	must(err)
	decodesExactly[client.Product](t, rec.answer(t, "GET", "/products/"+p.ID))
	p, err = c.TransitionProduct(ctx, v, p.ID, "publish", p.Revision)
	must(err)
	decodesExactly[client.Product](t, rec.answer(t, "POST", "/publish"))
	for _, err := range c.Products(ctx, v) {
		must(err)
	}
	decodesExactly[[]client.Product](t, rec.answer(t, "GET", "/products"))

	var item client.InventoryItem
	for it, err := range c.InventoryItems(ctx, v) {
		must(err)
		if it.ProductID == p.ID {
			item = it
		}
	}
	decodesExactly[[]client.InventoryItem](t, rec.answer(t, "GET", "/inventory-items"))
	item, _, err = c.AdjustInventoryItem(ctx, v, item.ID, 5, item.Version)
	must(err)
	decodesExactly[client.InventoryItem](t, rec.answer(t, "POST", "/adjustments"))
	_, err = c.GetInventoryItem(ctx, v, item.ID)
	must(err)
	decodesExactly[client.InventoryItem](t, rec.answer(t, "GET", "/inventory-items/"+item.ID))

	var roles client.ConnectionCreateRoles
	must(roles.FromRolePreset(client.RolePresetServiceSource))
	conn, err := c.CreateConnection(ctx, v, client.ConnectionCreate{Provider: client.ConnectionCreateProviderStorePlugin, ExternalAccountID: "shop-1", DisplayName: "Web store", Roles: roles})
	must(err)
	decodesExactly[client.Connection](t, rec.answer(t, "POST", "/connections"))
	must(roles.FromRoles(client.Roles{Catalog: "destination", BasePrice: "destination", Inventory: "destination", OrderIngress: "disabled", ExternalOrderFulfillment: "moku"}))
	other, err := c.CreateConnection(ctx, v, client.ConnectionCreate{Provider: "marketplace_a", ExternalAccountID: "acct-1", DisplayName: "Marketplace", Roles: roles})
	must(err)
	if other.Roles.Catalog != client.RolesCatalogDestination {
		t.Fatalf("roles sent as a Roles value came back as %+v", other.Roles)
	}
	_, err = c.TransitionConnection(ctx, v, other.ID, "pause", other.Version)
	must(err)
	decodesExactly[client.Connection](t, rec.answer(t, "POST", "/pause"))
	for _, err := range c.Connections(ctx, v) {
		must(err)
	}
	decodesExactly[[]client.Connection](t, rec.answer(t, "GET", "/connections"))

	r, err := c.CreateReservation(ctx, v, client.ReservationCreate{ConnectionID: conn.ID, InventoryItemID: item.ID, Quantity: 1, Reference: new("cart-1")})
	must(err)
	decodesExactly[client.Reservation](t, rec.answer(t, "POST", "/inventory-reservations"))
	_, err = c.TransitionReservation(ctx, v, r.ID, "commit", r.Version)
	must(err)
	decodesExactly[client.Reservation](t, rec.answer(t, "POST", "/commit"))

	sub, err := c.CreateWebhookSubscription(ctx, v, client.WebhookSubscriptionCreate{URL: hooks.URL + "/", EventTypes: []string{"*"}, Description: new("types test")})
	must(err)
	decodesExactly[client.WebhookSubscriptionWithSecret](t, rec.answer(t, "POST", "/webhook-subscriptions"))
	for _, err := range c.WebhookSubscriptions(ctx, v) {
		must(err)
	}
	decodesExactly[[]client.WebhookSubscription](t, rec.answer(t, "GET", "/webhook-subscriptions"))
	must(c.DeleteWebhookSubscription(ctx, v, sub.ID))

	var last client.Event
	for ev, err := range c.Events(ctx, v, "", 100) {
		must(err)
		last = ev
	}
	decodesExactly[[]client.Event](t, rec.answer(t, "GET", "/events"))
	_, err = c.GetEvent(ctx, v, last.ID)
	must(err)
	decodesExactly[client.Event](t, rec.answer(t, "GET", "/events/"+last.ID))

	if _, err := c.GetProduct(ctx, v, "prd_missing"); !client.IsCode(err, client.ErrorCodeNotFound) {
		t.Fatalf("missing product: %v", err)
	}
	var problem client.Problem
	dec := json.NewDecoder(bytes.NewReader(rec.answer(t, "GET", "/products/prd_missing")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&problem); err != nil || problem.Code != client.ErrorCodeNotFound || problem.Status != http.StatusNotFound {
		t.Fatalf("problem %+v: %v", problem, err)
	}
}
