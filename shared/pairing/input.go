package pairing

import (
	"math"
	"regexp"

	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/fields"
)

var (
	domainPattern   = regexp.MustCompile(`^(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?))+$`)
	platformPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	versionPattern  = regexp.MustCompile(`^[A-Za-z0-9._+-]{1,32}$`)
)

// ParseExchange reads {"code": "..."}.
func ParseExchange(body []byte) (string, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return "", err
	}
	code := o.String("code", fields.Required, fields.StringRule{Min: 1, Max: 64})
	return code, o.Err()
}

// maxCount bounds the catalog summary's counts.
const maxCount = 100_000_000

// ParseDiscovery reads the plugin's discovery report:
//
//	{"store": {"domain", "name", "platform", "platform_version"?, "currency"},
//	 "catalog": {"product_count", "variation_count", "published_count"?, "in_stock_count"?},
//	 "plugin_version"?}
func ParseDiscovery(body []byte) (Discovery, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Discovery{}, err
	}
	var d Discovery
	d.PluginVersion = o.String("plugin_version", fields.Optional, fields.StringRule{Pattern: versionPattern, PatternText: "1..32 letters, digits, . _ + -"})
	if st, err := fields.Parse(o.Raw("store"), o.Name("store")); o.Has("store") && err == nil {
		d.Store = StoreIdentity{
			Domain:          st.String("domain", fields.Required, fields.StringRule{Max: 253, Pattern: domainPattern, PatternText: "a host name such as shop.example.com"}),
			Name:            st.String("name", fields.Required, fields.StringRule{Min: 1, Max: 120, SingleLine: true, Trim: true}),
			Platform:        st.String("platform", fields.Required, fields.StringRule{Pattern: platformPattern, PatternText: "lowercase letters, digits, . _ -, up to 64"}),
			PlatformVersion: st.String("platform_version", fields.Optional, fields.StringRule{Pattern: versionPattern, PatternText: "1..32 letters, digits, . _ + -"}),
			Currency:        st.String("currency", fields.Required, fields.StringRule{Pattern: currencyPattern, PatternText: "an ISO 4217 code such as EUR"}),
		}
		o.Child(st)
	} else {
		o.Fail("store", "is required and must be an object")
	}
	if cat, err := fields.Parse(o.Raw("catalog"), o.Name("catalog")); o.Has("catalog") && err == nil {
		d.Catalog = CatalogSummary{
			ProductCount:   cat.Int("product_count", fields.Required, 0, maxCount),
			VariationCount: cat.Int("variation_count", fields.Required, 0, maxCount),
			PublishedCount: cat.Int("published_count", fields.Optional, 0, maxCount),
			InStockCount:   cat.Int("in_stock_count", fields.Optional, 0, maxCount),
		}
		o.Child(cat)
	} else {
		o.Fail("catalog", "is required and must be an object")
	}
	return d, o.Err()
}

// ParseAccept reads {"expected_version", "preset", "connection_id"?}.
func ParseAccept(body []byte) (AcceptInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return AcceptInput{}, err
	}
	var in AcceptInput
	in.ExpectedVersion = o.Int("expected_version", fields.Required, 0, math.MaxInt64)
	in.Preset = o.String("preset", fields.Required, fields.StringRule{OneOf: connection.PresetNames()})
	in.ConnectionID = o.String("connection_id", fields.Optional, fields.ConnectionIDRule)
	return in, o.Err()
}

// ParseCreate reads a create body: an empty object, for now.
func ParseCreate(body []byte) error {
	o, err := fields.Parse(body, "")
	if err != nil {
		return err
	}
	return o.Err()
}
