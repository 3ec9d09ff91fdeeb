package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/queue"
)

// clearEnv blanks every variable the package reads, so the machine's
// environment cannot leak into a test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{config.EnvBaseURL, config.EnvErrorsURL, config.EnvStore, config.EnvDataDir, config.EnvTable,
		config.EnvRateReads, config.EnvRateWrites, config.EnvStoreTimeout, config.EnvLogLevel, config.EnvMediaBucket,
		config.EnvMediaDir, config.EnvMediaBaseURL, config.EnvMediaBudgetBytes, config.EnvMediaBudgetObjects, config.EnvEdgeSecret,
		config.EnvKMSKeyARN, config.EnvKeyFile} {
		t.Setenv(name, "")
	}
	for _, name := range config.QueueURLEnv() {
		t.Setenv(name, "")
	}
}

// TestDefaults: the contract's limits (60 reads or 12 writes a minute; a
// media budget of 256 MiB and 1000 objects) and a valid local setup.
func TestDefaults(t *testing.T) {
	clearEnv(t)
	c, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.RateReads != 60 || c.RateWrites != 12 {
		t.Errorf("rates %d/%d, want 60/12", c.RateReads, c.RateWrites)
	}
	if c.MediaBudgetBytes != 256*1024*1024 || c.MediaBudgetObjects != 1000 {
		t.Errorf("media budget %d bytes %d objects", c.MediaBudgetBytes, c.MediaBudgetObjects)
	}
	if c.EdgeSecret != "" {
		t.Errorf("edge secret %q by default: a local run must not require an edge", c.EdgeSecret)
	}
	if c.Store != config.StoreSQLite || c.StoreTimeout <= 0 || c.QueueURLs != nil {
		t.Errorf("defaults %+v", c)
	}
	if c.ErrorsURL != c.BaseURL+"/errors" || c.BasePath() != "/v1" || c.MediaURL() != c.BaseURL {
		t.Errorf("derived: errors %q base path %q media %q", c.ErrorsURL, c.BasePath(), c.MediaURL())
	}
}

// TestFromEnv: every variable overrides its default; bad numbers and
// durations are errors naming the variable.
func TestFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv(config.EnvBaseURL, " https://api.example.com/v1/ ")
	t.Setenv(config.EnvStore, "dynamodb")
	t.Setenv(config.EnvTable, "prod-table")
	t.Setenv(config.EnvRateReads, "120")
	t.Setenv(config.EnvRateWrites, "24")
	t.Setenv(config.EnvStoreTimeout, "1500ms")
	t.Setenv(config.EnvMediaBaseURL, "https://cdn.example.com/")
	t.Setenv(config.EnvMediaBudgetBytes, "1048576")
	t.Setenv(config.EnvQueueURLSyncJobs, "https://sqs.example.com/123/sync")
	t.Setenv(config.EnvEdgeSecret, strings.Repeat("s", config.MinEdgeSecret))
	c, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "https://api.example.com/v1" || c.ErrorsURL != "https://api.example.com/v1/errors" || c.BasePath() != "/v1" {
		t.Errorf("base %q errors %q path %q", c.BaseURL, c.ErrorsURL, c.BasePath())
	}
	if c.Store != config.StoreDynamoDB || c.Table != "prod-table" || c.RateReads != 120 || c.RateWrites != 24 || c.StoreTimeout != 1500*time.Millisecond {
		t.Errorf("overrides %+v", c)
	}
	if c.MediaURL() != "https://cdn.example.com" || c.MediaBudgetBytes != 1<<20 || c.MediaBudgetObjects != 1000 {
		t.Errorf("media %q %d %d", c.MediaURL(), c.MediaBudgetBytes, c.MediaBudgetObjects)
	}
	if c.EdgeSecret != strings.Repeat("s", config.MinEdgeSecret) {
		t.Errorf("edge secret %q", c.EdgeSecret)
	}
	if len(c.QueueURLs) != 1 || c.QueueURLs[queue.SyncJobs] != "https://sqs.example.com/123/sync" {
		t.Errorf("queue URLs %v", c.QueueURLs)
	}

	for name, value := range map[string]string{
		config.EnvRateReads:              "sixty",
		config.EnvRateWrites:             "0",
		config.EnvStoreTimeout:           "5",
		config.EnvMediaBudgetObjects:     "1e3",
		config.EnvStore:                  "postgres",
		config.EnvBaseURL:                "/v1",
		config.EnvMediaBaseURL:           "ftp://cdn.example.com",
		config.EnvMediaBudgetBytes:       "-1",
		config.EnvQueueURLBulkOperations: "sqs-queue-name",
		config.EnvEdgeSecret:             strings.Repeat("s", config.MinEdgeSecret-1),
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(name, value)
			_, err := config.FromEnv()
			if err == nil {
				t.Fatalf("%s=%q accepted", name, value)
			}
			if strings.HasPrefix(name, "SELLERAPI_RATE") && value == "sixty" && !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name %s", err, name)
			}
		})
	}
}

// TestValidate: the checks of a configuration built in code.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*config.Config)
		ok   bool
	}{
		{"default", func(*config.Config) {}, true},
		{"no scheme", func(c *config.Config) { c.BaseURL = "api.example.com/v1" }, false},
		{"no host", func(c *config.Config) { c.BaseURL = "https:///v1" }, false},
		{"zero reads", func(c *config.Config) { c.RateReads = 0 }, false},
		{"zero timeout", func(c *config.Config) { c.StoreTimeout = 0 }, false},
		{"unknown log level", func(c *config.Config) { c.LogLevel = "verbose" }, false},
		{"log level any case", func(c *config.Config) { c.LogLevel = "WARN" }, true},
		{"negative budget", func(c *config.Config) { c.MediaBudgetObjects = -1 }, false},
		{"zero budget", func(c *config.Config) { c.MediaBudgetBytes = 0 }, true},
		{"queue without host", func(c *config.Config) { c.QueueURLs = map[string]string{queue.SellerOrders: "https://"} }, false},
		{"edge secret", func(c *config.Config) { c.EdgeSecret = strings.Repeat("x", config.MinEdgeSecret) }, true},
		{"short edge secret", func(c *config.Config) { c.EdgeSecret = "guessable" }, false},
		{"explicit errors URL", func(c *config.Config) { c.ErrorsURL = "https://docs.example.com/errors" }, true},
	} {
		cfg := config.Default()
		c.edit(&cfg)
		err := cfg.Validate()
		if c.ok != (err == nil) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	cfg := config.Default()
	cfg.ErrorsURL = "https://docs.example.com/errors"
	if cfg.Validate(); cfg.ErrorsURL != "https://docs.example.com/errors" {
		t.Errorf("an explicit errors URL was replaced by %q", cfg.ErrorsURL)
	}
}

// TestQueueURLEnv: one distinct variable for every work queue.
func TestQueueURLEnv(t *testing.T) {
	m := config.QueueURLEnv()
	seen := map[string]bool{}
	for _, q := range queue.Names() {
		env, ok := m[q]
		if !ok || env == "" {
			t.Errorf("queue %s has no URL variable", q)
		}
		if seen[env] {
			t.Errorf("variable %s names two queues", env)
		}
		seen[env] = true
	}
	if len(m) != len(queue.Names()) {
		t.Errorf("%d variables for %d queues", len(m), len(queue.Names()))
	}
}
