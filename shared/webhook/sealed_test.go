package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// testBox seals with a local master key of the test's own.
func testBox(t testing.TB) *envelope.Box {
	return envelope.New(envelope.NewKeyFile(filepath.Join(t.TempDir(), "master.key")))
}

// receiver records the signature header and body of each request.
type receiver struct {
	mu   sync.Mutex
	sigs []string
	body [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sigs = append(r.sigs, req.Header.Get(HeaderSignature))
	r.body = append(r.body, b)
}

// deliverOne routes a new event to the subscription and delivers it, and
// checks the receiver got it signed with secret.
func deliverOne(t *testing.T, st store.Store, clk *clock.Fake, d Deliverer, rcv *receiver, vendorID, secret string) {
	t.Helper()
	ctx := context.Background()
	ev := event.New(clk.Now(), vendorID, event.ProductCreated, "product", "prd_1", nil)
	op, _ := event.Op(ev)
	if err := st.Transact(ctx, op); err != nil {
		t.Fatal(err)
	}
	out, err := d.Rule(ctx, store.Change{Kind: store.Inserted, Key: op.Item.Key(), New: &op.Item})
	if err != nil || len(out) != 1 {
		t.Fatalf("fan-out: %v, %v", out, err)
	}
	if err := d.Handle(ctx, queue.Message{ID: ev.ID, Body: out[0].Body}); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	n := len(rcv.sigs)
	if n == 0 {
		t.Fatal("nothing was delivered")
	}
	if err := signature.Verify(rcv.sigs[n-1], rcv.body[n-1], secret, clk.Now(), 0); err != nil {
		t.Fatalf("delivery %d: the signature does not verify with the subscription's secret: %v (%s)", n, err, rcv.body[n-1][:80])
	}
}

// rawSubscription is the subscription item's stored document.
func rawSubscription(t *testing.T, st store.Store, vendorID, id string) []byte {
	t.Helper()
	it, err := st.Get(context.Background(), datamodel.SubscriptionKey(vendorID, id))
	if err != nil {
		t.Fatal(err)
	}
	return it.Data
}

// A signing secret is stored sealed: the item's bytes do not hold it, a
// worker with its own box (another process of the same key source) opens
// it and signs with it, and so after a rotation. A subscription written
// before secrets were sealed still delivers, and is sealed by its next
// write, with the same secret.
func TestSigningSecretsAreSealedAtRest(t *testing.T) {
	for name, open := range slotStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st := open(t, clk)
			rcv := &receiver{}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			keyFile := envelope.NewKeyFile(filepath.Join(t.TempDir(), "master.key"))
			policy := Policy{AllowLoopback: true}
			svc := Service{Store: st, Clock: clk, Policy: policy, Secrets: envelope.New(keyFile)}
			d := Deliverer{Store: st, Clock: clk, Queue: &sink{}, Policy: policy, Jitter: func() float64 { return 0 }, Secrets: envelope.New(keyFile)}
			const vendorID = "ven_1"

			prep, err := svc.PrepareCreate(ctx, vendorID, CreateInput{Destination: HTTPS(srv.URL + "/hook"), EventTypes: []string{"product.created"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Transact(ctx, prep.Ops...); err != nil {
				t.Fatal(err)
			}
			created := prep.View
			if raw := rawSubscription(t, st, vendorID, created.ID); bytes.Contains(raw, []byte(created.Secret)) || bytes.Contains(raw, []byte(created.Secret[len(SecretPrefix):])) {
				t.Fatalf("the stored item holds the signing secret: %s", raw)
			}
			deliverOne(t, st, clk, d, rcv, vendorID, created.Secret)

			rotated, err := svc.Rotate(ctx, vendorID, created.ID)
			if err != nil {
				t.Fatal(err)
			}
			if raw := rawSubscription(t, st, vendorID, created.ID); bytes.Contains(raw, []byte(rotated.Secret)) {
				t.Fatalf("the stored item holds the rotated secret: %s", raw)
			}
			deliverOne(t, st, clk, d, rcv, vendorID, rotated.Secret)

			// An item as written before issue 29: the secret in the clear.
			legacy := Subscription{Shown: Shown{ID: ids.Sortable("whsub", clk.Now()), VendorID: vendorID, URL: srv.URL + "/old", EventTypes: []string{AllTypes},
				Status: StatusEnabled, Version: 1, CreatedAt: clk.Now(), UpdatedAt: clk.Now()}, Secret: NewSecret()}
			doc, _ := json.Marshal(map[string]any{"id": legacy.ID, "vendor_id": vendorID, "url": legacy.URL, "event_types": legacy.EventTypes,
				"description": nil, "status": legacy.Status, "disabled_reason": nil, "disabled_at": nil, "version": 1,
				"created_at": legacy.CreatedAt, "updated_at": legacy.UpdatedAt, "secret": legacy.Secret})
			k := datamodel.SubscriptionKey(vendorID, legacy.ID)
			if err := st.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: doc, Nums: map[string]int64{datamodel.SuccessesAttr: 0}}, store.IfAbsent())); err != nil {
				t.Fatal(err)
			}
			if err := svc.Delete(ctx, vendorID, created.ID); err != nil {
				t.Fatal(err)
			}
			deliverOne(t, st, clk, d, rcv, vendorID, legacy.Secret)
			desc := "moved on"
			if _, err := svc.Update(ctx, vendorID, legacy.ID, UpdateInput{ExpectedVersion: 1, Description: &desc, DescriptionSet: true}); err != nil {
				t.Fatal(err)
			}
			raw := rawSubscription(t, st, vendorID, legacy.ID)
			if bytes.Contains(raw, []byte(legacy.Secret)) || !strings.Contains(string(raw), `"sealed_secret"`) {
				t.Fatalf("after its next write the legacy item still holds its secret in the clear: %s", raw)
			}
			clk.Advance(time.Minute)
			deliverOne(t, st, clk, d, rcv, vendorID, legacy.Secret)

			// A sealed secret copied onto another subscription does not
			// open there: the seal is bound to its item.
			var moved Subscription
			json.Unmarshal(raw, &moved)
			moved.ID = ids.Sortable("whsub", clk.Now())
			if err := moved.Open(ctx, d.Secrets); err == nil {
				t.Fatal("a sealed secret opened on another subscription")
			}
		})
	}
}
