package store

import (
	"encoding/json"
	"fmt"
)

// Unmarshal decodes the JSON document of it into a T whose version, the
// field version points at, is the item's: the decoding of every record
// stored as one item. what names the record's package in the error of a
// document that does not decode.
func Unmarshal[T any](it Item, what string, version func(*T) *int64) (T, error) {
	var v T
	if err := json.Unmarshal(it.Data, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("%s: decode %s: %w", what, it.SK, err)
	}
	*version(&v) = it.Version
	return v, nil
}
