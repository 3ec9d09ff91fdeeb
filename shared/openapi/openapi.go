// Package openapi holds the machine-readable contract served at
// GET /openapi.json: an OpenAPI 3.1 document kept by hand in openapi.json
// beside this file. Tests keep it in step with the mounted routes and the
// error catalog.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed openapi.json
var document []byte

// Version is the contract version the document declares.
const Version = "1.0.0-beta.2"

// placeholder is the server the embedded document names; Document
// replaces it with the deployment's base URL.
const placeholder = `"url": "http://127.0.0.1:8080/v1"`

// Document returns the document, in its written order, with its server
// set to baseURL.
func Document(baseURL string) ([]byte, error) {
	if !json.Valid(document) || bytes.Count(document, []byte(placeholder)) != 1 {
		return nil, fmt.Errorf("openapi: the embedded document is invalid or lacks its one server placeholder")
	}
	url, err := json.Marshal(baseURL)
	if err != nil {
		return nil, fmt.Errorf("openapi: base URL: %w", err)
	}
	return bytes.Replace(document, []byte(placeholder), append([]byte(`"url": `), url...), 1), nil
}

// Raw returns the embedded document as written.
func Raw() []byte { return document }
