package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// invoke sends f the sample event path (under events/) with its vendor and
// token, and connectionID when the event names one.
func invoke(t *testing.T, f lt.Function, path, connectionID string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return f.Call(t, path, map[string]string{"CONNECTION_ID": connectionID})
}

// roles are a connection's five roles.
type roles struct {
	Catalog                  string `json:"catalog"`
	BasePrice                string `json:"base_price"`
	Inventory                string `json:"inventory"`
	OrderIngress             string `json:"order_ingress"`
	ExternalOrderFulfillment string `json:"external_order_fulfillment"`
}

// The store plugin's presets these events use.
var (
	serviceSource      = roles{Catalog: "destination", BasePrice: "destination", Inventory: "destination", OrderIngress: "enabled", ExternalOrderFulfillment: "moku"}
	storeCatalogSource = roles{Catalog: "source", BasePrice: "source", Inventory: "destination", OrderIngress: "enabled", ExternalOrderFulfillment: "moku"}
)

// health is a connection's last health report.
type health struct {
	State          string   `json:"state"`
	LastObservedAt *string  `json:"last_observed_at"`
	LastSuccessAt  *string  `json:"last_success_at"`
	Blockers       []string `json:"blockers"`
}

// connection is the part of a connection view these tests look at.
type connection struct {
	ID                string `json:"id"`
	VendorID          string `json:"vendor_id"`
	Provider          string `json:"provider"`
	ExternalAccountID string `json:"external_account_id"`
	DisplayName       string `json:"display_name"`
	Status            string `json:"status"`
	Roles             roles  `json:"roles"`
	Health            health `json:"health"`
	Version           int64  `json:"version"`
}

// create sends create-connection.json and checks the new connection it
// answers: active, at version 1, with the service_source roles and no
// health report yet.
func create(t *testing.T, f lt.Function) (events.APIGatewayV2HTTPResponse, connection) {
	t.Helper()
	resp := invoke(t, f, "connections/create-connection.json", "")
	c := lt.Answer[connection](t, resp, http.StatusCreated)
	want := connection{ID: c.ID, VendorID: f.Vendor.ID, Provider: "store_plugin", ExternalAccountID: "shop-4411",
		DisplayName: "Main web store", Status: "active", Roles: serviceSource, Health: health{State: "unknown", Blockers: []string{}}, Version: 1}
	if !strings.HasPrefix(c.ID, "conn_") || !reflect.DeepEqual(c, want) {
		t.Errorf("created %+v, want %+v with an id conn_…", c, want)
	}
	return resp, c
}

// master is one domain's master in the vendor authority.
type master struct {
	Type         string  `json:"type"`
	ConnectionID *string `json:"connection_id"`
}

type authority struct {
	VendorID        string `json:"vendor_id"`
	CatalogMaster   master `json:"catalog_master"`
	BasePriceMaster master `json:"base_price_master"`
	InventoryPools  []struct {
		StockPoolID string `json:"stock_pool_id"`
		Master      master `json:"master"`
	} `json:"inventory_pools"`
}

// wantAuthority sends get-authority.json and wants catalog and base price
// mastered by catalog (the service when empty) and the default Stock Pool by
// the service.
func wantAuthority(t *testing.T, f lt.Function, catalog string) {
	t.Helper()
	resp := invoke(t, f, "connections/get-authority.json", "")
	got := lt.Answer[authority](t, resp, http.StatusOK)
	a := got
	want := master{Type: "moku"}
	if catalog != "" {
		want = master{Type: "connection", ConnectionID: &catalog}
	}
	if a.VendorID != f.Vendor.ID || !reflect.DeepEqual(a.CatalogMaster, want) || !reflect.DeepEqual(a.BasePriceMaster, want) {
		t.Errorf("authority %s: want catalog and base price mastered by %+v", resp.Body, want)
	}
	if len(a.InventoryPools) != 1 || a.InventoryPools[0].StockPoolID != "default" || !reflect.DeepEqual(a.InventoryPools[0].Master, master{Type: "moku"}) {
		t.Errorf("inventory pools %+v, want the default pool mastered by moku", a.InventoryPools)
	}
}

// TestCreateConnection: a new connection, and the same request again replays it.
func TestCreateConnection(t *testing.T) {
	f := lt.OnSQLite(t, group())
	first, _ := create(t, f)
	f.WantReplayed(t, "connections/create-connection.json", first)
}

func TestGetConnection(t *testing.T) {
	f := lt.OnSQLite(t, group())
	_, created := create(t, f)
	resp := invoke(t, f, "connections/get-connection.json", created.ID)
	if got := lt.Answer[connection](t, resp, http.StatusOK); !reflect.DeepEqual(got, created) {
		t.Errorf("got %+v, want %+v", got, created)
	}
}

func TestListConnections(t *testing.T) {
	f := lt.OnSQLite(t, group())
	_, created := create(t, f)
	resp := invoke(t, f, "connections/list-connections.json", "")
	got := lt.Answer[[]connection](t, resp, http.StatusOK)
	if want := []connection{created}; !reflect.DeepEqual(got, want) {
		t.Errorf("data = %+v, want %+v", got, want)
	}
}

// TestAuthority: a service_source connection claims nothing; once its roles
// are replaced by store_catalog_source, it masters catalog and base price
// while the service keeps the Stock Pool.
func TestAuthority(t *testing.T) {
	wantAuthorityFollowsRoles(t, lt.OnSQLite(t, group()))
}

// wantAuthorityFollowsRoles creates a connection and wants the authority
// before and after its roles are replaced (TestAuthority).
func wantAuthorityFollowsRoles(t *testing.T, f lt.Function) {
	t.Helper()
	_, created := create(t, f)
	wantAuthority(t, f, "")
	wantRolesReplaced(t, f, created)
	wantAuthority(t, f, created.ID)
}

// wantRolesReplaced pauses created (pause-connection.json, version 1 → 2),
// then replaces its roles (replace-roles.json, at version 2).
func wantRolesReplaced(t *testing.T, f lt.Function, created connection) {
	t.Helper()
	resp := invoke(t, f, "connections/pause-connection.json", created.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	want := created
	want.Status, want.Version = "paused", 2
	if got := lt.Data[connection](t, resp); !reflect.DeepEqual(got, want) {
		t.Errorf("paused %+v, want %+v", got, want)
	}

	resp = invoke(t, f, "connections/replace-roles.json", created.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	want.Roles, want.Version = storeCatalogSource, 3
	if got := lt.Data[connection](t, resp); !reflect.DeepEqual(got, want) {
		t.Errorf("roles replaced: %+v, want %+v", got, want)
	}
}

func TestReportHealth(t *testing.T) {
	f := lt.OnSQLite(t, group())
	_, created := create(t, f)
	resp := invoke(t, f, "connections/report-health.json", created.ID)
	got := lt.Answer[health](t, resp, http.StatusOK)
	// The times are the sample's own, whatever day the test runs.
	var sent health
	if err := json.Unmarshal([]byte(lt.Event(t, "connections/report-health.json", map[string]string{"VENDOR_ID": "v", "CONNECTION_ID": "c", "TOKEN": "t"}).Body), &sent); err != nil || sent.LastObservedAt == nil {
		t.Fatalf("the sample report has no last_observed_at: %v", err)
	}
	at := *sent.LastObservedAt
	want := health{State: "healthy", LastObservedAt: &at, LastSuccessAt: &at, Blockers: []string{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reported %s, want %+v", resp.Body, want)
	}
	// The report is telemetry: the connection shows it, at the same version.
	resp = invoke(t, f, "connections/get-connection.json", created.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	after := created
	after.Health = want
	if c := lt.Data[connection](t, resp); !reflect.DeepEqual(c, after) {
		t.Errorf("read back %+v, want %+v", c, after)
	}
}

// TestServesItsGroup: the function mounts the Connections group alone.
func TestServesItsGroup(t *testing.T) {
	lt.ServesOnly(t, group(), "connections/list-connections.json", http.StatusOK, nil)
}

// TestDynamoDB runs the connection's events against DynamoDB Local, the
// store the Lambda uses in AWS. It skips without the emulator unless
// REQUIRE_EMULATORS=1.
func TestDynamoDB(t *testing.T) {
	wantAuthorityFollowsRoles(t, lt.OnDynamoDB(t, group()))
}
