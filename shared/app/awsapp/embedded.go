//go:build embedded

package awsapp

import (
	"github.com/moku/sellerapi/shared/app/embedded"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// openEmbedded opens the embedded store of the configured data directory.
func openEmbedded(cfg config.Config, c clock.Clock) (store.Store, error) {
	return sqlite.Open(cfg.DataDir, sqlite.WithClock(c.Now))
}

// embeddedBlob is the media or data directory (embedded.Blob).
func embeddedBlob(cfg config.Config) blob.Store { return embedded.Blob(cfg) }
