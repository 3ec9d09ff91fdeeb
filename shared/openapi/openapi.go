// Package openapi holds the machine-readable contract served at
// GET /openapi.json: an OpenAPI 3.1 document kept by hand in openapi.json
// beside this file. Tests keep it in step with the mounted routes and the
// error catalog.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed openapi.json
var document []byte

// Version is the contract version the document declares.
const Version = "1.0.0-beta.2"

// Document returns the document with its server set to baseURL.
func Document(baseURL string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, fmt.Errorf("openapi: embedded document: %w", err)
	}
	doc["servers"] = []map[string]string{{"url": baseURL, "description": "This deployment"}}
	return json.MarshalIndent(doc, "", "  ")
}

// Raw returns the embedded document as written.
func Raw() []byte { return document }
