package main

import (
	"net/http"
	"testing"

	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// TestServesItsGroup sends the group's sample event through the handler
// main builds, and checks that only this group is mounted.
func TestServesItsGroup(t *testing.T) {
	lt.ServesOnly(t, group(), "bulk-operations/get-bulk-operation.json", http.StatusNotFound, map[string]string{"BULK_OPERATION_ID": "bop_missing"})
}
