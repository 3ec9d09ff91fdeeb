package webhook

import (
	"math"
	"strconv"
	"time"

	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
)

// CreateInput is a parsed subscription create body.
type CreateInput struct {
	Destination Destination
	EventTypes  []string
	Description *string
}

var descriptionRule = fields.StringRule{Max: 500, SingleLine: true}

// ParseCreate reads a create body: url or destination (one of them),
// and event_types required, description optional. The destination's shape
// is checked here against p; an https host is resolved when the
// subscription is prepared.
func ParseCreate(body []byte, p Policy) (CreateInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return CreateInput{}, err
	}
	var in CreateInput
	dest, field, sent := readTarget(o)
	if !sent && !o.Has("url") {
		o.Fail("url", "send url, or a destination object")
	}
	in.Destination = dest
	in.EventTypes = readTypes(o, fields.Required)
	in.Description, _ = o.StringPtr("description", fields.OptionalNullable, descriptionRule)
	if err := o.Err(); err != nil {
		return CreateInput{}, err
	}
	if err := p.CheckDestination(in.Destination, field); err != nil {
		return CreateInput{}, err
	}
	return in, nil
}

// readTarget reads where deliveries go: url alone (an https destination,
// as before destinations existed) or a destination object, not both. It
// returns the destination, the field it came from, and whether one was
// sent.
func readTarget(o *fields.Object) (Destination, string, bool) {
	if o.Has("url") && o.Has("destination") {
		o.Fail("destination", "send url or destination, not both")
		return Destination{}, "", false
	}
	if d, ok := readDestination(o); ok {
		return d, "destination", true
	}
	u, _ := o.StringPtr("url", fields.Optional, fields.StringRule{Min: 1, Max: MaxURLLength})
	if u == nil {
		return Destination{}, "", false
	}
	return HTTPS(*u), "url", true
}

// UpdateInput is a parsed PATCH body: expected_version and the fields to
// change (nil when not sent).
type UpdateInput struct {
	ExpectedVersion int64
	// Destination replaces the destination (url alone, or destination).
	Destination    *Destination
	EventTypes     []string
	Description    *string
	DescriptionSet bool
	Status         *string
	// RecoverSince, sent with status enabled, starts a recovery of the
	// re-enabled subscription from then to now (recover.go).
	RecoverSince *time.Time
}

// ParseUpdate reads a PATCH body.
func ParseUpdate(body []byte, p Policy) (UpdateInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return UpdateInput{}, err
	}
	var in UpdateInput
	in.ExpectedVersion = o.Int("expected_version", fields.Required, 0, math.MaxInt64)
	dest, field, sent := readTarget(o)
	if sent {
		in.Destination = &dest
	}
	if o.Has("event_types") {
		in.EventTypes = readTypes(o, fields.Optional)
	}
	in.DescriptionSet = o.Has("description")
	in.Description, _ = o.StringPtr("description", fields.OptionalNullable, descriptionRule)
	in.Status, _ = o.StringPtr("status", fields.Optional, fields.StringRule{OneOf: []string{StatusEnabled, StatusDisabled}})
	in.RecoverSince = o.Time("recover_since", fields.OptionalNullable)
	if in.RecoverSince != nil && (in.Status == nil || *in.Status != StatusEnabled) {
		o.Fail("recover_since", "is taken only with \"status\": \"enabled\", when re-enabling; POST .../recover recovers an enabled subscription")
	}
	if err := o.Err(); err != nil {
		return UpdateInput{}, err
	}
	if in.Destination != nil {
		if err := p.CheckDestination(*in.Destination, field); err != nil {
			return UpdateInput{}, err
		}
	}
	return in, nil
}

// readTypes reads event_types: 1..30 unique types, each one the service
// emits, or "*" alone.
func readTypes(o *fields.Object, p fields.Presence) []string {
	types := o.Strings("event_types", p, fields.ListRule{Max: MaxEventTypes, Unique: true, Item: fields.StringRule{Min: 1, Max: 100}})
	if types == nil {
		return nil
	}
	if len(types) == 0 {
		o.Fail("event_types", "must name at least one event type, or \"*\" for all")
		return nil
	}
	for i, t := range types {
		switch {
		case t == AllTypes && len(types) > 1:
			o.Fail("event_types", "\"*\" already means every type; send it alone")
			return nil
		case t != AllTypes && !event.Known(t):
			o.Fail("event_types["+strconv.Itoa(i)+"]", "%q is not an event type; see docs/events.md", t)
			return nil
		}
	}
	return types
}

// ReplayInput is a parsed replay body.
type ReplayInput struct {
	// SubscriptionIDs limits the destinations; nil means every
	// subscription of the vendor that receives the event's type.
	SubscriptionIDs []string
}

// ParseReplay reads a replay body; an empty body is {}.
func ParseReplay(body []byte) (ReplayInput, error) {
	if len(body) == 0 {
		return ReplayInput{}, nil
	}
	o, err := fields.Parse(body, "")
	if err != nil {
		return ReplayInput{}, err
	}
	var in ReplayInput
	in.SubscriptionIDs = o.Strings("subscription_ids", fields.OptionalNullable, fields.ListRule{Max: MaxSubscriptions, Unique: true, Item: fields.StringRule{Min: 1, Max: 128}})
	if in.SubscriptionIDs != nil && len(in.SubscriptionIDs) == 0 {
		o.Fail("subscription_ids", "must name at least one subscription; omit it to replay to all")
	}
	return in, o.Err()
}
