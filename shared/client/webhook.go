package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/moku/sellerapi/shared/webhook/signature"
)

// Delivery is a verified webhook delivery.
type Delivery struct {
	Event      Event
	EventID    string // Moku-Event-Id: deduplicate on it (at least once)
	DeliveryID string // Moku-Delivery-Id
	Attempt    string // Moku-Delivery-Attempt
	Body       []byte // the raw body that was signed
}

// VerifyWebhook checks a delivery's Moku-Signature against the
// subscription's secret (timestamps within tolerance of now; 0 is the
// scheme's default of 5 minutes) and decodes its event. Nothing in an
// unverified body is to be trusted.
func VerifyWebhook(h http.Header, body []byte, secret string, now time.Time, tolerance time.Duration) (Delivery, error) {
	if err := signature.Verify(h.Get(signature.Header), body, secret, now, tolerance); err != nil {
		return Delivery{}, fmt.Errorf("client: webhook signature: %w", err)
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Delivery{}, fmt.Errorf("client: webhook body: %w", err)
	}
	if id := h.Get("Moku-Event-Id"); id != ev.ID {
		return Delivery{}, fmt.Errorf("client: webhook: Moku-Event-Id %q names another event than the body's %q", id, ev.ID)
	}
	return Delivery{Event: ev, EventID: ev.ID, DeliveryID: h.Get("Moku-Delivery-Id"), Attempt: h.Get("Moku-Delivery-Attempt"), Body: body}, nil
}

// maxDelivery bounds the body a receiver reads.
const maxDelivery = 1 << 20

// ReadWebhook reads and verifies a delivery from an incoming request.
func ReadWebhook(r *http.Request, secret string, now time.Time) (Delivery, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxDelivery+1))
	if err != nil {
		return Delivery{}, fmt.Errorf("client: webhook: read: %w", err)
	}
	if len(body) > maxDelivery {
		return Delivery{}, fmt.Errorf("client: webhook: body over %d bytes", maxDelivery)
	}
	return VerifyWebhook(r.Header, body, secret, now, 0)
}
