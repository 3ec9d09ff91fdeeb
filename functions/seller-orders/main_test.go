package main

import (
	"net/http"
	"testing"

	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// TestServesItsGroup sends the group's sample event through the handler
// main builds, and checks that only this group is mounted.
func TestServesItsGroup(t *testing.T) {
	lt.ServesOnly(t, group(), "seller-orders/list-seller-orders.json", http.StatusOK, nil)
}
