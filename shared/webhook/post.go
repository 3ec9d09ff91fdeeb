package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// ResponseExcerpt is how much of a receiver's answer an attempt keeps.
const ResponseExcerpt = 1024

// answer is what a receiver answered an attempt: its status (0 when no
// HTTP response came) and the first ResponseExcerpt bytes of its body;
// answered when an answer came, ok when it was a success (a 2xx, or an
// AWS API's acceptance).
type answer struct {
	status   int
	excerpt  []byte
	answered bool
	ok       bool
}

// deliver makes one attempt to the subscription's destination: a signed
// POST, or the same body and headers through an AWS API (sendAWS).
func (d Deliverer) deliver(ctx context.Context, sub Subscription, ev event.Event, m Message) (answer, time.Duration, error) {
	if sub.Destination.IsAWS() {
		return d.sendAWS(ctx, sub, ev, m)
	}
	return d.post(ctx, sub, ev, m)
}

// post sends the signed request and reports what the receiver answered
// (status 0 when no response came), how long it took, and what went wrong.
func (d Deliverer) post(ctx context.Context, sub Subscription, ev event.Event, m Message) (answer, time.Duration, error) {
	// The address is checked again on every attempt: the policy may be
	// stricter now than when the subscription was made, and the dialer
	// checks the address actually connected to.
	u, err := d.Policy.ParseURL(sub.Destination.URL)
	if err != nil {
		return answer{}, 0, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return answer{}, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return answer{}, 0, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(HeaderEventID, ev.ID)
	h.Set(HeaderDeliveryID, m.DeliveryID)
	h.Set(HeaderAttempt, strconv.Itoa(m.Attempt))
	h.Set(HeaderSignature, signature.Sign(sub.Secret, d.Clock.Now(), body))
	client := d.Client
	if client == nil {
		client = NewClient(d.Policy)
	}
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return answer{}, time.Since(start), err
	}
	// The first bytes of the answer are kept for the attempt's record (the
	// vendor reads them as text; nothing here interprets them). A little
	// more is read so the connection can be reused.
	excerpt, _ := io.ReadAll(io.LimitReader(res.Body, ResponseExcerpt))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	ok := res.StatusCode >= 200 && res.StatusCode < 300
	return answer{status: res.StatusCode, excerpt: excerpt, answered: true, ok: ok}, time.Since(start), nil
}

// Excerpt is the text an attempt record shows of an answer's first bytes:
// invalid UTF-8 replaced, so that it is a JSON string; nil for no answer.
func Excerpt(b []byte, answered bool) *string {
	if !answered {
		return nil
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return &s
}

// describe turns a transport error into a short, stable message for the
// vendor's attempt records.
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var r refusal
	var dnsErr *net.DNSError
	var ne net.Error
	var e *errs.Error
	switch {
	case errors.As(err, &r):
		return r.Error()
	case errors.As(err, &e):
		return e.Detail
	case errors.As(err, &dnsErr):
		return "dns: " + dnsErr.Err + " (" + dnsErr.Name + ")"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout: no response in time"
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}
