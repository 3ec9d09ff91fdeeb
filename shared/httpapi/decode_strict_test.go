package httpapi

// DecodeStrict is the test routes' decoder (package encoding/json with
// unknown properties refused). No route of the service uses it: they read
// bodies with Call.Body and their group's fields parser, which
// TestJSONBodies drives.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/errs"
)

// DecodeStrict decodes a JSON object into dst, refusing unknown properties,
// wrong types and trailing data with a 400 whose detail names the field.
func DecodeStrict(b []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return errs.E(errs.CodeInvalidJSON, "body: unexpected data after the JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return errs.Ef(errs.CodeInvalidRequest, "%s: must be %s, not %s", field, jsonType(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return errs.Ef(errs.CodeInvalidJSON, "body: malformed JSON at byte %d", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errs.Ef(errs.CodeInvalidRequest, "%s: unknown property; it is not accepted here", name)
	}
	return errs.Wrap(errs.CodeInvalidJSON, fmt.Sprintf("body: %v", err), err)
}

// jsonType names a Go kind the way a JSON client thinks of it.
func jsonType(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr", "interface":
		return "an object"
	}
	return "of another type"
}
