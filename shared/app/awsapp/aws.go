//go:build !embedded

package awsapp

import (
	"fmt"

	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/store"
)

// openEmbedded refuses: a deployed build links no embedded store.
func openEmbedded(config.Config, clock.Clock) (store.Store, error) {
	return nil, fmt.Errorf("awsapp: this build has no embedded store (SELLERAPI_STORE=%s); build with -tags embedded to run a function's binary on a data directory", config.StoreSQLite)
}

// embeddedBlob is nil: without a bucket a deployed function has no media
// storage.
func embeddedBlob(config.Config) blob.Store { return nil }
