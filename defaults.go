// Package quiver holds what ships with the quiver binary: the default
// servers.yaml, used when no configuration file is found.
package quiver

import _ "embed"

// DefaultConfig is the servers.yaml at the root of the repository.
//
//go:embed servers.yaml
var DefaultConfig []byte
