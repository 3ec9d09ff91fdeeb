package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/client"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// TestGeneratedShapesAgainstTheServer calls, against the real server in
// process (apitest checks each exchange against the document), one
// operation of each shape the generator writes beyond the tour's: no
// credential, the whole body as JSON or bytes, a body that is always {},
// a PATCH, an enum filter, a keyed renew, a filtered list and a path
// parameter that needs escaping.
func TestGeneratedShapesAgainstTheServer(t *testing.T) {
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) { c.AllowPrivateWebhooks = true }})
	ctx := context.Background()
	c := client.New(e.URL, e.Token)
	v := e.Vendor.ID
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Public operations are sent without the credential.
	anonymous := client.New(e.URL, "")
	codes, _, err := anonymous.ListErrorCodes(ctx)
	if err != nil || len(codes) == 0 {
		t.Fatalf("error codes: %d %v", len(codes), err)
	}
	doc, _, err := anonymous.GetOpenAPI(ctx)
	var parsed struct {
		OpenAPI string `json:"openapi"`
	}
	if err != nil || json.Unmarshal(doc, &parsed) != nil || parsed.OpenAPI == "" {
		t.Fatalf("openapi: %.80s %v", doc, err)
	}
	page, res, err := anonymous.GetDocs(ctx)
	if err != nil || !bytes.Contains(page, []byte("<html")) || res.Status != http.StatusOK {
		t.Fatalf("docs: %.80s %v", page, err)
	}
	if _, _, err := anonymous.GetVendor(ctx, client.GetVendorRequest{VendorID: v}); !client.IsCode(err, client.ErrorCodeUnauthenticated) {
		t.Fatalf("a vendor read without a token: %v", err)
	}

	// Webhook subscriptions: PATCH, and a rotate whose body is always {}.
	sub, _, err := c.CreateWebhookSubscription(ctx, client.CreateWebhookSubscriptionRequest{VendorID: v,
		Body: client.WebhookSubscriptionCreate{URL: new(e.URL + "/hooks"), EventTypes: []string{"product.created"}}})
	must(err)
	updated, _, err := c.UpdateWebhookSubscription(ctx, client.UpdateWebhookSubscriptionRequest{VendorID: v, SubscriptionID: sub.ID,
		Body: client.WebhookSubscriptionUpdate{ExpectedVersion: sub.Version, Description: new("renamed")}})
	if err != nil || updated.Description == nil || *updated.Description != "renamed" || updated.Version != sub.Version+1 {
		t.Fatalf("update: %+v %v", updated, err)
	}
	rotated, _, err := c.RotateWebhookSubscriptionSecret(ctx, client.RotateWebhookSubscriptionSecretRequest{VendorID: v, SubscriptionID: sub.ID})
	if err != nil || rotated.Secret == "" || rotated.Secret == sub.Secret {
		t.Fatalf("rotate: %v", err)
	}

	// Stock: a reservation renewed with a key, filtered by status; the
	// stock effects of the item, one read by its id.
	p, _, err := c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: shirt("shapes")})
	must(err)
	var item client.InventoryItem
	for it, err := range c.AllInventoryItems(ctx, client.ListInventoryItemsRequest{VendorID: v}) {
		must(err)
		if it.ProductID == p.ID {
			item = it
		}
	}
	item, _, err = c.AdjustInventoryItem(ctx, client.AdjustInventoryItemRequest{VendorID: v, InventoryItemID: item.ID, Body: client.Adjustment{TargetOnHand: 4, ExpectedVersion: item.Version}})
	must(err)
	var roles client.ConnectionCreateRoles
	must(roles.FromRolePreset(client.RolePresetServiceSource))
	conn, _, err := c.CreateConnection(ctx, client.CreateConnectionRequest{VendorID: v,
		Body: client.ConnectionCreate{Provider: client.ConnectionProviderStorePlugin, ExternalAccountID: "shop-shapes", DisplayName: "Web store", Roles: roles}})
	must(err)
	health, _, err := c.ReportConnectionHealth(ctx, client.ReportConnectionHealthRequest{VendorID: v, ConnectionID: conn.ID,
		Body: client.HealthReport{State: client.HealthReportStateDegraded, Blockers: []string{"slow"}}})
	if err != nil || health.State != client.ConnectionHealthStateDegraded {
		t.Fatalf("health: %+v %v", health, err)
	}
	if health, _, err = c.GetConnectionHealth(ctx, client.GetConnectionHealthRequest{VendorID: v, ConnectionID: conn.ID}); err != nil || health.State != client.ConnectionHealthStateDegraded {
		t.Fatalf("read health: %+v %v", health, err)
	}
	r, _, err := c.CreateReservation(ctx, client.CreateReservationRequest{VendorID: v,
		Body: client.ReservationCreate{ConnectionID: conn.ID, InventoryItemID: item.ID, Quantity: 1}})
	must(err)
	renew := client.RenewReservationRequest{VendorID: v, ReservationID: r.ID, IdempotencyKey: "renew-shapes-1",
		Body: client.ReservationRenew{ExpectedVersion: r.Version, ExpiresInSeconds: new(int64(600))}}
	renewed, res, err := c.RenewReservation(ctx, renew)
	if err != nil || renewed.Version != r.Version+1 || res.Replayed {
		t.Fatalf("renew: %+v %v", renewed, err)
	}
	if again, res, err := c.RenewReservation(ctx, renew); err != nil || !res.Replayed || again.Version != renewed.Version {
		t.Fatalf("renew replayed: %+v %+v %v", again, res, err)
	}
	count := func(status client.ListReservationsStatus) int {
		n := 0
		for _, err := range c.AllReservations(ctx, client.ListReservationsRequest{VendorID: v, Status: status, ConnectionID: conn.ID}) {
			must(err)
			n++
		}
		return n
	}
	if count(client.ListReservationsStatusActive) != 1 || count(client.ListReservationsStatusReleased) != 0 {
		t.Fatal("the status filter before release")
	}
	_, _, err = c.ReleaseReservation(ctx, client.ReleaseReservationRequest{VendorID: v, ReservationID: r.ID, Body: client.VersionBody{ExpectedVersion: renewed.Version}})
	must(err)
	if count(client.ListReservationsStatusActive) != 0 || count(client.ListReservationsStatusReleased) != 1 {
		t.Fatal("the status filter after release")
	}
	var effects []client.StockEffect
	for ef, err := range c.AllStockEffects(ctx, client.ListStockEffectsRequest{VendorID: v, InventoryItemID: item.ID, Limit: 1}) {
		must(err)
		if ef.InventoryItemID != item.ID {
			t.Fatalf("effect of another item: %+v", ef)
		}
		effects = append(effects, ef)
	}
	if len(effects) < 2 {
		t.Fatalf("effects %+v", effects)
	}
	if ef, _, err := c.GetStockEffect(ctx, client.GetStockEffectRequest{VendorID: v, EffectID: effects[0].ID}); err != nil || ef.ID != effects[0].ID {
		t.Fatalf("effect by id: %+v %v", ef, err)
	}
	if auth, _, err := c.GetVendorAuthority(ctx, client.GetVendorAuthorityRequest{VendorID: v}); err != nil || auth.VendorID != v {
		t.Fatalf("authority: %+v %v", auth, err)
	}

	// A store pairing: the code is exchanged without a credential, and
	// the discovery token it gives is a client's credential of its own.
	pairing, _, err := c.CreateStorePairing(ctx, client.CreateStorePairingRequest{VendorID: v})
	if err != nil || pairing.Code == nil {
		t.Fatalf("pairing: %+v %v", pairing, err)
	}
	exchanged, _, err := anonymous.ExchangeStorePairingCode(ctx, client.ExchangeStorePairingCodeRequest{Body: client.StorePairingExchange{Code: *pairing.Code}})
	if err != nil || exchanged.PairingID != pairing.ID || exchanged.DiscoveryToken == "" {
		t.Fatalf("exchange: %+v %v", exchanged, err)
	}
	plugin := client.New(e.URL, exchanged.DiscoveryToken)
	if current, _, err := plugin.GetCurrentStorePairing(ctx); err != nil || current.ID != pairing.ID {
		t.Fatalf("current pairing: %+v %v", current, err)
	}
	if _, _, err := plugin.GetVendor(ctx, client.GetVendorRequest{VendorID: v}); err == nil {
		t.Fatal("a discovery token read the vendor")
	}
}
