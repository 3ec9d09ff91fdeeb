package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// measure sends b.N requests built by req one after another over a
// keep-alive client and reports requests/s, p50, p99 and, when rt is given,
// store round trips per request.
func measure(b *testing.B, req func() *http.Request, roundTrips *atomic.Int64) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := client.Do(req())
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("status %d", res.StatusCode)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if roundTrips != nil {
		b.ReportMetric(float64(roundTrips.Load())/float64(b.N), "roundtrips/op")
	}
}

// BenchmarkGetVendor measures GET /vendors/{id} on each store beside a bare
// net/http handler that writes the same body, so the platform's overhead
// reads as a ratio.
func BenchmarkGetVendor(b *testing.B) {
	b.Run("baseline-net-http", func(b *testing.B) {
		body, _ := json.Marshal(map[string]any{"data": map[string]string{"id": "ven_x", "name": "Acme Goods", "slug": "acme-goods"}})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
		defer srv.Close()
		measure(b, func() *http.Request { r, _ := http.NewRequest("GET", srv.URL+"/v1/vendors/ven_x", nil); return r }, nil)
	})
	for _, kind := range apitest.Stores() {
		b.Run(string(kind), func(b *testing.B) {
			var rts atomic.Int64
			e := apitest.New(b, apitest.Options{Store: kind, Groups: []httpapi.Group{httpapi.Vendors},
				Config:  func(c *config.Config) { c.RateReads = 1 << 30 },
				Observe: func(o httpapi.Observation) { rts.Add(o.RoundTrips) }})
			url := e.URL + "/vendors/" + e.Vendor.ID
			measure(b, func() *http.Request {
				r, _ := http.NewRequest("GET", url, nil)
				r.Header.Set("Authorization", "Bearer "+e.Token)
				return r
			}, &rts)
		})
	}
}
