// Package config holds the service's settings, read once at start from the
// environment (every Lambda) and overridden by flags (the local binary).
package config

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variable names: the one place that names them, shared by the
// functions, the local binary and the CDK stack.
const (
	EnvBaseURL      = "SELLERAPI_BASE_URL"
	EnvErrorsURL    = "SELLERAPI_ERRORS_URL"
	EnvStore        = "SELLERAPI_STORE"
	EnvDataDir      = "SELLERAPI_DATA_DIR"
	EnvTable        = "SELLERAPI_TABLE"
	EnvRateReads    = "SELLERAPI_RATE_READS"
	EnvRateWrites   = "SELLERAPI_RATE_WRITES"
	EnvStoreTimeout = "SELLERAPI_STORE_TIMEOUT"
	EnvLogLevel     = "SELLERAPI_LOG_LEVEL"
)

// Store kinds.
const (
	StoreSQLite   = "sqlite"
	StoreDynamoDB = "dynamodb"
)

// Config is the service's configuration.
type Config struct {
	// BaseURL is the public address of the API, ending in the version
	// segment, e.g. https://api.example.com/v1.
	BaseURL string
	// ErrorsURL is the address whose fragments name problem types.
	ErrorsURL string
	// Store is StoreSQLite or StoreDynamoDB.
	Store string
	// DataDir is the embedded store's directory.
	DataDir string
	// Table is the DynamoDB table name.
	Table string
	// RateReads and RateWrites are the per-vendor one-minute allowances.
	RateReads, RateWrites int
	// StoreTimeout bounds each request's store work; past it the request
	// fails closed with 503.
	StoreTimeout time.Duration
	// AllowPrivateWebhooks lets local tests deliver webhooks to loopback.
	AllowPrivateWebhooks bool
	// LogLevel is debug, info, warn or error.
	LogLevel string
}

// Default is the configuration of a local run.
func Default() Config {
	return Config{
		BaseURL:      "http://127.0.0.1:8080/v1",
		Store:        StoreSQLite,
		DataDir:      ".data",
		Table:        "sellerapi",
		RateReads:    60,
		RateWrites:   12,
		StoreTimeout: 5 * time.Second,
		LogLevel:     "info",
	}
}

// FromEnv returns Default overridden by the environment.
func FromEnv() (Config, error) {
	c := Default()
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			*dst = v
		}
	}
	str(EnvBaseURL, &c.BaseURL)
	str(EnvErrorsURL, &c.ErrorsURL)
	str(EnvStore, &c.Store)
	str(EnvDataDir, &c.DataDir)
	str(EnvTable, &c.Table)
	str(EnvLogLevel, &c.LogLevel)
	for name, dst := range map[string]*int{EnvRateReads: &c.RateReads, EnvRateWrites: &c.RateWrites} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("config: %s: %w", name, err)
			}
			*dst = n
		}
	}
	if v := os.Getenv(EnvStoreTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("config: %s: %w", EnvStoreTimeout, err)
		}
		c.StoreTimeout = d
	}
	return c, c.Validate()
}

// Validate checks the configuration and fills derived defaults.
func (c *Config) Validate() error {
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("config: base URL %q is not an absolute URL", c.BaseURL)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.ErrorsURL == "" {
		c.ErrorsURL = c.BaseURL + "/errors"
	}
	if c.Store != StoreSQLite && c.Store != StoreDynamoDB {
		return fmt.Errorf("config: store %q is neither %s nor %s", c.Store, StoreSQLite, StoreDynamoDB)
	}
	if c.RateReads < 1 || c.RateWrites < 1 {
		return fmt.Errorf("config: rate allowances must be at least 1 (reads %d, writes %d)", c.RateReads, c.RateWrites)
	}
	if c.StoreTimeout <= 0 {
		return fmt.Errorf("config: store timeout must be positive")
	}
	return nil
}

// BasePath is the path of BaseURL, e.g. /v1: every route is served under it.
func (c Config) BasePath() string {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return ""
	}
	return strings.TrimRight(u.Path, "/")
}
