package app_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// discard is a queue that keeps nothing.
type discard struct{}

func (discard) Send(context.Context, string, []byte, time.Duration) error { return nil }

// TestEventsARuleRoutesKeepTheirMarkers: for a vendor without webhook
// subscriptions, the deployed hook (app.MarkPending) writes an event
// without its pending marker exactly when no work's rule routes it, so
// that the projections other rules make from events (seller orders) are
// never left to the stream mapping alone, and a rule added on events
// fails here until its types are kept.
func TestEventsARuleRoutesKeepTheirMarkers(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := app.New(ctx, config.Default(), app.WithStore(st), app.WithClock(clk), app.WithLogOutput(t.Output()),
		app.WithKeySource(envelope.NewKeyFile(filepath.Join(t.TempDir(), "master.key"))))
	if err != nil {
		t.Fatal(err)
	}
	mark := app.MarkPending(clk.Now)
	none := pipeline.WithReceivers(ctx, pipeline.ReceiversOf("ven_1", store.Item{}))
	var routed, unmarked int
	for _, typ := range event.Types() {
		op, err := event.Op(event.New(clk.Now(), "ven_1", typ, "external_order", "xo_1", nil))
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, w := range a.Works(discard{}) {
			if w.Rule == nil {
				continue
			}
			out, err := w.Rule(ctx, store.Change{Kind: store.Inserted, Key: op.Item.Key(), New: &op.Item})
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			sent += len(out)
		}
		marked := len(mark(none, []store.Op{op})) == 2
		if marked != (sent > 0) {
			t.Errorf("%s: routed to %d messages without a subscription, marked %v", typ, sent, marked)
		}
		if sent > 0 {
			routed++
		} else {
			unmarked++
		}
	}
	if routed == 0 || unmarked == 0 {
		t.Fatalf("%d event types routed without a subscription, %d not: the test sees nothing", routed, unmarked)
	}
}
