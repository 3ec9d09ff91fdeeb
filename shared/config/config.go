// Package config holds the service's settings, read once at start from the
// environment (every Lambda) and overridden by flags (the local binary).
package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/queue"
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
	EnvRatePublic   = "SELLERAPI_RATE_PUBLIC"
	EnvRateExchange = "SELLERAPI_RATE_EXCHANGE"
	EnvStoreTimeout = "SELLERAPI_STORE_TIMEOUT"
	EnvLogLevel     = "SELLERAPI_LOG_LEVEL"

	// EnvMetricsNamespace, when set, makes the request and delivery log
	// lines carry CloudWatch embedded metrics in that namespace (the stack
	// sets sellerapi/<stage>); unset locally, the lines stay plain.
	EnvMetricsNamespace = "SELLERAPI_METRICS_NAMESPACE"

	// EnvEdgeSecret is the value the edge (CloudFront, infra's edge.go)
	// sends to the origin in httpapi.EdgeHeader. When set, a request
	// without it is refused with 403 and a public route's per-client
	// window is keyed on the viewer address the edge reports. Unset
	// locally: every request is the client's own.
	EnvEdgeSecret = "SELLERAPI_EDGE_SECRET"

	// EnvKMSKeyARN names the customer-managed KMS key that wraps the data
	// keys sealing secrets at rest (webhook signing secrets, the cursor
	// keys; package envelope): what the stack sets on every function.
	// Unset, a process seals with the local master key in EnvKeyFile.
	EnvKMSKeyARN = "SELLERAPI_KMS_KEY_ARN"
	// EnvKeyFile is the local master key's file when no KMS key is named;
	// default: master.key in the data directory, created on first use.
	EnvKeyFile = "SELLERAPI_KEY_FILE"

	// EnvWebhookRoleARN names the delivery role the webhook deliveries to
	// AWS destinations (SQS, EventBridge) assume, each with a session tag
	// of its vendor id: what the stack sets on the functions that deliver.
	// Unset (a local run), they use the process's own credentials.
	EnvWebhookRoleARN = "SELLERAPI_WEBHOOK_ROLE_ARN"

	// EnvAllowPrivateWebhooks ("true") lets webhooks reach private and
	// loopback addresses: what --allow-private-webhooks sets on the
	// functions of a local cloud run (scripts/cloud). Never set by the stack.
	EnvAllowPrivateWebhooks = "SELLERAPI_ALLOW_PRIVATE_WEBHOOKS"

	// Media storage: an S3 bucket, or else a directory (default: the
	// embedded store's data directory); the public address objects are
	// served under; and the per-vendor admission budget.
	EnvMediaBucket        = "SELLERAPI_MEDIA_BUCKET"
	EnvMediaDir           = "SELLERAPI_MEDIA_DIR"
	EnvMediaBaseURL       = "SELLERAPI_MEDIA_BASE_URL"
	EnvMediaBudgetBytes   = "SELLERAPI_MEDIA_BUDGET_BYTES"
	EnvMediaBudgetObjects = "SELLERAPI_MEDIA_BUDGET_OBJECTS"
	EnvMediaDecodeBytes   = "SELLERAPI_MEDIA_DECODE_BYTES"

	// Work queues on SQS: each queue's URL (see QueueURLEnv()). The stream
	// router and every worker get all three; without them the local
	// binary on DynamoDB runs no background work.
	EnvQueueURLWebhookDeliveries = "SELLERAPI_QUEUE_URL_WEBHOOK_DELIVERIES"
	EnvQueueURLWebhookSlowLane   = "SELLERAPI_QUEUE_URL_WEBHOOK_SLOW_LANE"
	EnvQueueURLBulkOperations    = "SELLERAPI_QUEUE_URL_BULK_OPERATIONS"
	EnvQueueURLEventReplays      = "SELLERAPI_QUEUE_URL_EVENT_REPLAYS"
	EnvQueueURLSellerOrders      = "SELLERAPI_QUEUE_URL_SELLER_ORDERS"
	EnvQueueURLSyncJobs          = "SELLERAPI_QUEUE_URL_SYNC_JOBS"
)

// QueueURLEnv names the variable holding each work queue's SQS URL, by the
// queue's name in package queue.
func QueueURLEnv() map[string]string {
	return map[string]string{
		queue.WebhookDeliveries: EnvQueueURLWebhookDeliveries,
		queue.WebhookSlowLane:   EnvQueueURLWebhookSlowLane,
		queue.BulkOperations:    EnvQueueURLBulkOperations,
		queue.EventReplays:      EnvQueueURLEventReplays,
		queue.SellerOrders:      EnvQueueURLSellerOrders,
		queue.SyncJobs:          EnvQueueURLSyncJobs,
	}
}

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
	// RatePublic is each client's one-minute allowance on the
	// unauthenticated routes that do work (media files), RateExchange on
	// the pairing-code exchange; a client is its IP address (IPv6: /64).
	RatePublic, RateExchange int
	// StoreTimeout bounds each request's store work; past it the request
	// fails closed with 503.
	StoreTimeout time.Duration
	// AllowPrivateWebhooks lets local tests deliver webhooks to loopback.
	AllowPrivateWebhooks bool
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// MetricsNamespace, when set, is the CloudWatch namespace of the
	// metrics the log lines embed (EnvMetricsNamespace).
	MetricsNamespace string
	// EdgeSecret, when set, is what a request must carry in
	// httpapi.EdgeHeader to be served: the API is reachable only through
	// its edge (EnvEdgeSecret). At least MinEdgeSecret characters.
	EdgeSecret string

	// MediaBucket is the S3 bucket of uploaded images; when empty,
	// MediaDir is used, and when that is empty too the embedded store's
	// DataDir (a DynamoDB deployment without a bucket has no media storage
	// and answers uploads with 503).
	MediaBucket string
	MediaDir    string
	// MediaBaseURL is the public address objects are served under (a
	// record's url is MediaBaseURL/media/<sha256>.webp), e.g. a CDN in
	// front of the bucket; empty means BaseURL, whose GET /media/{file}
	// serves them. See MediaURL.
	MediaBaseURL string
	// MediaBudgetBytes and MediaBudgetObjects are each vendor's admission
	// budget, pending uploads included.
	MediaBudgetBytes, MediaBudgetObjects int64
	// MediaDecodeBytes is the memory the process's image decodes may hold
	// at once, by their header estimates; one image above it is refused.
	MediaDecodeBytes int64
	// MediaDecodeTimeout bounds one image's decode and re-encode; past it
	// the upload answers 503. Zero is media.DefaultDecodeTimeout.
	MediaDecodeTimeout time.Duration

	// KMSKeyARN is the KMS key of secrets at rest; empty means the local
	// master key in KeyFile (see LocalKeyFile).
	KMSKeyARN string
	KeyFile   string

	// WebhookRoleARN is the delivery role of AWS destinations
	// (EnvWebhookRoleARN); empty means the process's own credentials.
	WebhookRoleARN string

	// QueueURLs maps each work queue's name (package queue) to its SQS
	// URL; empty in embedded mode, whose queues live in the data directory.
	QueueURLs map[string]string
}

// MinEdgeSecret is the shortest edge secret accepted: guessing it must be
// out of reach (the stack generates 48 letters and digits).
const MinEdgeSecret = 32

// Default is the configuration of a local run.
func Default() Config {
	return Config{
		BaseURL:      "http://127.0.0.1:8080/v1",
		Store:        StoreSQLite,
		DataDir:      ".data",
		Table:        "sellerapi",
		RateReads:    60,
		RateWrites:   12,
		RatePublic:   120,
		RateExchange: 10,
		StoreTimeout: 5 * time.Second,
		LogLevel:     "info",

		MediaBudgetBytes:   256 << 20,
		MediaBudgetObjects: 1000,
		MediaDecodeBytes:   256 << 20,
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
	str(EnvMetricsNamespace, &c.MetricsNamespace)
	str(EnvEdgeSecret, &c.EdgeSecret)
	str(EnvMediaBucket, &c.MediaBucket)
	str(EnvMediaDir, &c.MediaDir)
	str(EnvMediaBaseURL, &c.MediaBaseURL)
	str(EnvKMSKeyARN, &c.KMSKeyARN)
	str(EnvKeyFile, &c.KeyFile)
	str(EnvWebhookRoleARN, &c.WebhookRoleARN)
	for name, env := range QueueURLEnv() {
		if v := strings.TrimSpace(os.Getenv(env)); v != "" {
			if c.QueueURLs == nil {
				c.QueueURLs = make(map[string]string)
			}
			c.QueueURLs[name] = v
		}
	}
	for name, dst := range map[string]*int64{EnvMediaBudgetBytes: &c.MediaBudgetBytes, EnvMediaBudgetObjects: &c.MediaBudgetObjects, EnvMediaDecodeBytes: &c.MediaDecodeBytes} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return c, fmt.Errorf("config: %s: %w", name, err)
			}
			*dst = n
		}
	}
	for name, dst := range map[string]*int{EnvRateReads: &c.RateReads, EnvRateWrites: &c.RateWrites, EnvRatePublic: &c.RatePublic, EnvRateExchange: &c.RateExchange} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("config: %s: %w", name, err)
			}
			*dst = n
		}
	}
	if v := os.Getenv(EnvAllowPrivateWebhooks); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("config: %s: %w", EnvAllowPrivateWebhooks, err)
		}
		c.AllowPrivateWebhooks = b
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

// LocalKeyFile is the local master key's file: KeyFile, or master.key in
// the data directory.
func (c Config) LocalKeyFile() string {
	if c.KeyFile != "" {
		return c.KeyFile
	}
	return filepath.Join(c.DataDir, "master.key")
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
	if c.RateReads < 1 || c.RateWrites < 1 || c.RatePublic < 1 || c.RateExchange < 1 {
		return fmt.Errorf("config: rate allowances must be at least 1 (reads %d, writes %d, public %d, exchange %d)", c.RateReads, c.RateWrites, c.RatePublic, c.RateExchange)
	}
	if c.EdgeSecret != "" && len(c.EdgeSecret) < MinEdgeSecret {
		return fmt.Errorf("config: %s must be at least %d characters", EnvEdgeSecret, MinEdgeSecret)
	}
	if c.StoreTimeout <= 0 {
		return fmt.Errorf("config: store timeout must be positive")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("config: %s %q is not debug, info, warn or error: %w", EnvLogLevel, c.LogLevel, err)
	}
	if c.MediaBaseURL != "" {
		u, err := url.Parse(c.MediaBaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("config: media base URL %q is not an absolute http(s) URL", c.MediaBaseURL)
		}
		c.MediaBaseURL = strings.TrimRight(c.MediaBaseURL, "/")
	}
	if c.MediaBudgetBytes < 0 || c.MediaBudgetObjects < 0 {
		return fmt.Errorf("config: media budgets must not be negative")
	}
	if c.MediaDecodeBytes < 1<<20 {
		return fmt.Errorf("config: %s must be at least 1 MiB", EnvMediaDecodeBytes)
	}
	for name, v := range c.QueueURLs {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("config: URL %q of queue %s is not an absolute http(s) URL", v, name)
		}
	}
	return nil
}

// MediaURL is the public address media objects are served under.
func (c Config) MediaURL() string {
	if c.MediaBaseURL != "" {
		return c.MediaBaseURL
	}
	return c.BaseURL
}

// BasePath is the path of BaseURL, e.g. /v1: every route is served under it.
func (c Config) BasePath() string {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return ""
	}
	return strings.TrimRight(u.Path, "/")
}
