package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// TestSampleEventsWalkThePairing sends the sample events in the order the
// seller and the plugin would, through the handler main builds.
func TestSampleEventsWalkThePairing(t *testing.T) {
	f := lt.SQLite(t)
	h := f.Handler(t, config.Default(), group())
	vars := f.Vars()
	invoke := func(path string) string {
		t.Helper()
		resp := lt.Invoke(t, h, lt.Event(t, path, vars))
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Body)
		}
		return resp.Body
	}

	var created struct {
		Data struct {
			ID, Status string
			Code       string
		}
	}
	lt.Decode(t, invoke("store-pairings/create-store-pairing.json"), &created)
	if created.Data.Status != "pending_exchange" || len(created.Data.Code) != 19 {
		t.Fatalf("created %+v", created.Data)
	}
	vars["CODE"], vars["PAIRING_ID"] = created.Data.Code, created.Data.ID

	var x struct {
		Data struct {
			PairingID      string `json:"pairing_id"`
			DiscoveryToken string `json:"discovery_token"`
		}
	}
	lt.Decode(t, invoke("store-pairings/exchange-store-pairing-code.json"), &x)
	if x.Data.PairingID != created.Data.ID || !strings.HasPrefix(x.Data.DiscoveryToken, "mkdsc_") {
		t.Fatalf("exchanged %+v", x.Data)
	}
	vars["DISCOVERY_TOKEN"] = x.Data.DiscoveryToken

	var cur struct{ Data struct{ Status string } }
	lt.Decode(t, invoke("store-pairings/get-current-store-pairing.json"), &cur)
	if cur.Data.Status != "discovering" {
		t.Fatalf("current %+v", cur.Data)
	}
	invoke("store-pairings/post-store-pairing-discovery.json")

	var acc struct {
		Data struct {
			Status            string
			OperationalWrites string `json:"operational_writes"`
		}
	}
	lt.Decode(t, invoke("store-pairings/accept-store-pairing.json"), &acc)
	if acc.Data.Status != "accepted" || acc.Data.OperationalWrites != "refused" {
		t.Fatalf("accepted %+v", acc.Data)
	}

	// The exchange is public; a second try with the same code is refused.
	resp := lt.Invoke(t, h, lt.Event(t, "store-pairings/exchange-store-pairing-code.json", vars))
	if p := lt.WantProblem(t, resp, http.StatusConflict); p.Code != "PAIRING_CODE_USED" {
		t.Fatalf("second exchange: %+v", p)
	}
}
