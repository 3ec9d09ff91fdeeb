package embedded_test

import (
	"testing"

	"github.com/moku/sellerapi/shared/app/embedded"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
)

// TestOnlyWebhookSendsMayBeLostWithTheMachine: the local queue syncs every
// send that carries work the contract keeps (jobs, replays, seller-order
// projections) before the router's cursor moves past it; webhook
// deliveries, which the contract lets be lost, are not synced.
func TestOnlyWebhookSendsMayBeLostWithTheMachine(t *testing.T) {
	st, l, err := embedded.Open(t.TempDir(), clocktest.Fake(2026, 1, 1, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	q, ok := l.Queue.(*sqlitequeue.Queue)
	if !ok || q.Durable == nil {
		t.Fatalf("the local queue is %T with no Durable rule", l.Queue)
	}
	for _, name := range queue.Names() {
		if want := name != queue.WebhookDeliveries && name != queue.WebhookSlowLane; q.Durable(name) != want {
			t.Errorf("Durable(%s) = %v, want %v", name, !want, want)
		}
	}
}
