// Package signature signs and verifies webhook deliveries. It is the small,
// dependency-free package a receiver copies or imports: a delivery's
// Moku-Signature header is "t=<unix seconds>,v1=<hex>", where the hex is
// HMAC-SHA256, keyed with the full signing secret (whsec_...), of
// "<t>.<raw body>". A header may carry several v1 values; one match is
// enough.
//
//	err := signature.Verify(r.Header.Get("Moku-Signature"), body, secret, time.Now(), 0)
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the name of the signature header.
const Header = "Moku-Signature"

// DefaultTolerance is how far a signature's timestamp may be from now when
// Verify is given no tolerance.
const DefaultTolerance = 300 * time.Second

// Errors of Verify; use errors.Is.
var (
	ErrMalformed = errors.New("signature: malformed header")
	ErrNoV1      = errors.New("signature: no v1 signature in the header")
	ErrTimestamp = errors.New("signature: timestamp outside the tolerance")
	ErrMismatch  = errors.New("signature: no signature matches the body")
)

// Compute returns the hex HMAC-SHA256 of "<t>.<body>" keyed with secret.
func Compute(secret string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign returns the header value for body signed with secret at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := t.Unix()
	return "t=" + strconv.FormatInt(ts, 10) + ",v1=" + Compute(secret, ts, body)
}

// Parsed is a parsed header.
type Parsed struct {
	Timestamp int64
	V1        []string
}

// Parse reads a header value: comma-separated key=value pairs with exactly
// one t and any number of v1; other keys (future schemes) are ignored.
func Parse(header string) (Parsed, error) {
	var p Parsed
	seenT := false
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Parsed{}, fmt.Errorf("%w: %q is not key=value", ErrMalformed, part)
		}
		switch k {
		case "t":
			if seenT {
				return Parsed{}, fmt.Errorf("%w: more than one t", ErrMalformed)
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return Parsed{}, fmt.Errorf("%w: t is not a Unix time", ErrMalformed)
			}
			p.Timestamp, seenT = n, true
		case "v1":
			p.V1 = append(p.V1, v)
		}
	}
	if !seenT {
		return Parsed{}, fmt.Errorf("%w: no t", ErrMalformed)
	}
	if len(p.V1) == 0 {
		return Parsed{}, ErrNoV1
	}
	return p, nil
}

// Verify checks a delivery: the header parses, its timestamp is within
// tolerance of now (either side; DefaultTolerance when tolerance is 0,
// no check when it is negative), and one of its v1 signatures is the
// HMAC of the raw body with secret, compared in constant time.
func Verify(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	p, err := Parse(header)
	if err != nil {
		return err
	}
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if tolerance > 0 {
		skew := now.Sub(time.Unix(p.Timestamp, 0))
		if skew > tolerance || skew < -tolerance {
			return fmt.Errorf("%w: signed at %d, %s from now", ErrTimestamp, p.Timestamp, skew.Round(time.Second))
		}
	}
	want := []byte(Compute(secret, p.Timestamp, body))
	ok := false
	for _, v := range p.V1 {
		// Every candidate is compared, so timing tells nothing about which.
		if hmac.Equal(want, []byte(strings.ToLower(v))) {
			ok = true
		}
	}
	if !ok {
		return ErrMismatch
	}
	return nil
}
