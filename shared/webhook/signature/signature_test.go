package signature_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/webhook/signature"
)

const secret = "whsec_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst"

var body = []byte(`{"id":"evt_1","type":"product.created"}`)

func TestSignMatchesTheDocumentedRecipe(t *testing.T) {
	at := time.Unix(1767225600, 0)
	h := signature.Sign(secret, at, body)
	// HMAC-SHA256 keyed with the full secret over "<t>.<raw body>", in hex.
	want := "t=1767225600,v1=" + signature.Compute(secret, 1767225600, body)
	if h != want || len(strings.TrimPrefix(h, "t=1767225600,v1=")) != 64 {
		t.Fatalf("Sign = %q, want %q", h, want)
	}
	if signature.Compute(secret, 1767225600, body) == signature.Compute(secret, 1767225601, body) {
		t.Fatal("the timestamp is not part of the signed string")
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1767225600, 0)
	good := signature.Sign(secret, now, body)
	other := signature.Compute("whsec_other", now.Unix(), body)
	cases := []struct {
		name   string
		header string
		body   []byte
		secret string
		now    time.Time
		tol    time.Duration
		want   error
	}{
		{"valid", good, body, secret, now, 0, nil},
		{"valid 299 s later", good, body, secret, now.Add(299 * time.Second), 0, nil},
		{"too old for the default 300 s", good, body, secret, now.Add(301 * time.Second), 0, signature.ErrTimestamp},
		{"too far in the future", good, body, secret, now.Add(-301 * time.Second), 0, signature.ErrTimestamp},
		{"a wider tolerance", good, body, secret, now.Add(time.Hour), 2 * time.Hour, nil},
		{"no timestamp check", good, body, secret, now.Add(1000 * time.Hour), -1, nil},
		{"body changed", good, []byte(`{"id":"evt_2"}`), secret, now, 0, signature.ErrMismatch},
		{"other secret", good, body, "whsec_other", now, 0, signature.ErrMismatch},
		{"secret without its prefix", good, body, strings.TrimPrefix(secret, "whsec_"), now, 0, signature.ErrMismatch},
		{"one of several v1 matches", "t=1767225600,v1=" + other + "," + strings.TrimPrefix(good, "t=1767225600,"), body, secret, now, 0, nil},
		{"unknown schemes are ignored", good + ",v0=abc", body, secret, now, 0, nil},
		{"spaces around pairs", strings.ReplaceAll(good, ",", ", "), body, secret, now, 0, nil},
		{"uppercase hex", "t=1767225600,v1=" + strings.ToUpper(signature.Compute(secret, now.Unix(), body)), body, secret, now, 0, nil},
		{"empty", "", body, secret, now, 0, signature.ErrMalformed},
		{"no t", "v1=" + other, body, secret, now, 0, signature.ErrMalformed},
		{"two t", good + ",t=1", body, secret, now, 0, signature.ErrMalformed},
		{"t not a number", "t=soon,v1=" + other, body, secret, now, 0, signature.ErrMalformed},
		{"no v1", "t=1767225600", body, secret, now, 0, signature.ErrNoV1},
		{"v1 not hex", "t=1767225600,v1=zz", body, secret, now, 0, signature.ErrMismatch},
		{"retimed", "t=1767225601,v1=" + signature.Compute(secret, now.Unix(), body), body, secret, now, 0, signature.ErrMismatch},
	}
	for _, tc := range cases {
		err := signature.Verify(tc.header, tc.body, tc.secret, tc.now, tc.tol)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
}
