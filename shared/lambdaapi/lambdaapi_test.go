package lambdaapi_test

import (
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// An invalid configuration fails init instead of serving.
func TestNewRejectsInvalidConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Store = "memcached"
	h, err := lambdaapi.New(t.Context(), cfg, []httpapi.Group{httpapi.Vendors})
	if err == nil || h != nil {
		t.Fatalf("New = %v, %v; want no handler and an error", h, err)
	}
}
