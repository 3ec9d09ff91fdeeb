package client

import "encoding/json"

// The API's shapes are generated into types.gen.go and its operations into
// operations.gen.go (go generate); this file holds what the generator
// cannot know.

// DecodeData decodes the event's data into v: the <Type>EventData type of
// the event's schema (ProductCreatedEventData for product.created), or
// any struct with the fields the type lists. Event's Value decodes the
// whole event as its type instead.
func (e EventEnvelope) DecodeData(v any) error { return json.Unmarshal(e.Data, v) }
