package connection_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/fields"
)

// TestNewConnection: status active, health unknown with no blockers, all
// four counters 0, version 1.
func TestNewConnection(t *testing.T) {
	f := newFixture(t)
	v := f.mustCreate(t, connection.StorePlugin, preset(t, "service_source"))
	got, h, _, err := f.svc.Get(context.Background(), vendorID, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	read := got.View(h)
	for _, x := range []connection.View{v, read} {
		if x.Status != connection.StatusActive || x.Version != 1 || x.Health.State != connection.HealthUnknown || x.Health.Blockers == nil || len(x.Health.Blockers) != 0 {
			t.Fatalf("new connection %+v", x)
		}
		if x.ActiveListingCount != 0 || x.ActiveReservationCount != 0 || x.UnresolvedExternalOrderCount != 0 || x.ActiveChannelFulfillmentCount != 0 {
			t.Fatalf("new connection's counters %+v", x)
		}
		if x.Health.LastObservedAt != nil || x.Health.LastSuccessAt != nil {
			t.Fatalf("new connection's health times %+v", x.Health)
		}
	}
	if !fields.ConnectionIDPattern.MatchString(v.ID) {
		t.Fatalf("id %q does not match the contract's pattern", v.ID)
	}
}

// TestStatusMachine: pause, resume and disconnect from each status; the
// action's own target is a no-op; disconnected is final.
func TestStatusMachine(t *testing.T) {
	for _, row := range []struct {
		from, action, to string // to "" means 409
	}{
		{connection.StatusActive, connection.Pause, connection.StatusPaused},
		{connection.StatusPaused, connection.Pause, connection.StatusPaused},
		{connection.StatusPaused, connection.Resume, connection.StatusActive},
		{connection.StatusActive, connection.Resume, connection.StatusActive},
		{connection.StatusActive, connection.Disconnect, connection.StatusDisconnected},
		{connection.StatusPaused, connection.Disconnect, connection.StatusDisconnected},
		{connection.StatusDisconnected, connection.Disconnect, connection.StatusDisconnected},
		{connection.StatusDisconnected, connection.Pause, ""},
		{connection.StatusDisconnected, connection.Resume, ""},
	} {
		t.Run(row.from+"_"+row.action, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			c := f.mustCreate(t, connection.StorePlugin, preset(t, "service_source"))
			version := c.Version
			switch row.from {
			case connection.StatusPaused:
				v, err := f.svc.Transition(ctx, vendorID, c.ID, connection.Pause, version)
				if err != nil {
					t.Fatal(err)
				}
				version = v.Version
			case connection.StatusDisconnected:
				v, err := f.svc.Transition(ctx, vendorID, c.ID, connection.Disconnect, version)
				if err != nil {
					t.Fatal(err)
				}
				version = v.Version
			}
			got, err := f.svc.Transition(ctx, vendorID, c.ID, row.action, version)
			stored := f.load(t, c.ID)
			if row.to == "" {
				dt.WantCode(t, err, errs.CodeConnectionState)
				if stored.Status != row.from || stored.Version != version {
					t.Fatalf("a refused %s changed the connection: %s v%d", row.action, stored.Status, stored.Version)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := version + 1
			if row.from == row.to {
				want = version
			}
			if got.Status != row.to || stored.Status != row.to || stored.Version != want || got.Version != want {
				t.Fatalf("returned %s v%d, stored %s v%d; want %s v%d", got.Status, got.Version, stored.Status, stored.Version, row.to, want)
			}
		})
	}
}

// TestTransitionStaleVersion: a stale expected_version is 409.
func TestTransitionStaleVersion(t *testing.T) {
	f := newFixture(t)
	c := f.mustCreate(t, connection.StorePlugin, preset(t, "service_source"))
	_, err := f.svc.Transition(context.Background(), vendorID, c.ID, connection.Pause, c.Version+1)
	dt.WantCode(t, err, errs.CodeConnectionVersion)
}

// TestDisconnectNeedsIdleConnection: disconnecting needs no live work and
// gives the connection's authority back to the service.
func TestDisconnectNeedsIdleConnection(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	c := f.mustCreate(t, connection.StorePlugin, preset(t, "store_source"))
	for _, attr := range []string{datamodel.ActiveListingsAttr, datamodel.ActiveReservationsAttr, datamodel.UnresolvedOrdersAttr, datamodel.ChannelFulfillmentsAttr, datamodel.OpenConflictsAttr} {
		f.count(t, c.ID, attr, 2)
		_, err := f.svc.Transition(ctx, vendorID, c.ID, connection.Disconnect, c.Version)
		dt.WantCode(t, err, errs.CodeConnectionBusy)
		f.count(t, c.ID, attr, -2)
	}
	if _, err := f.svc.Transition(ctx, vendorID, c.ID, connection.Disconnect, c.Version); err != nil {
		t.Fatal(err)
	}
	a, _ := f.svc.Authority(ctx, vendorID)
	if a.CatalogMaster.ConnectionID != nil || a.BasePriceMaster.ConnectionID != nil || a.InventoryPools[0].Master.ConnectionID != nil {
		t.Fatalf("a disconnected connection still masters: %+v", a)
	}
	// A disconnected connection takes no roles and no health reports.
	_, err := f.svc.ReplaceRoles(ctx, vendorID, c.ID, connection.RolesInput{ExpectedVersion: c.Version + 1, Roles: noRoles})
	dt.WantCode(t, err, errs.CodeConnectionState)
	_, err = f.svc.ReportHealth(ctx, vendorID, c.ID, connection.Health{State: connection.HealthHealthy})
	dt.WantCode(t, err, errs.CodeConnectionState)
}

// TestHealthReportsDoNotMoveVersion: health is telemetry beside the
// connection, not a change of it.
func TestHealthReportsDoNotMoveVersion(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	c := f.mustCreate(t, connection.StorePlugin, preset(t, "service_source"))
	now := f.Clock.Now()
	h, err := connection.ParseHealth([]byte(`{"state":"degraded","last_observed_at":"` + now.Format("2006-01-02T15:04:05Z") + `","blockers":["token expired"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.ReportHealth(ctx, vendorID, c.ID, h); err != nil {
		t.Fatal(err)
	}
	got, health, _, err := f.svc.Get(ctx, vendorID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != c.Version || health.State != connection.HealthDegraded || len(health.Blockers) != 1 || health.LastObservedAt == nil || !health.LastObservedAt.Equal(now) {
		t.Fatalf("after a report: version %d health %+v", got.Version, health)
	}
}

// TestUnknownConnections: ids outside the pattern and absent ids are 404.
func TestUnknownConnections(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"conn_absent", "bad/id", ""} {
		_, _, _, err := f.svc.Get(context.Background(), vendorID, id)
		dt.WantCode(t, err, errs.CodeNotFound)
	}
}
