// Package api holds the OpenAPI document of the service's HTTP API (cmd/api),
// embedded so that tools and tests read the same bytes that are committed. Its tests
// check the document against the real router, error mapping and JSON types.
package api

import _ "embed"

// OpenAPI is the OpenAPI 3.0 document (YAML) of every route cmd/api serves.
//
//go:embed openapi.yaml
var OpenAPI []byte
