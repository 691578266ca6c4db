package main

import "github.com/quiver-mcp/quiver/gate"

// processAlive is gate.ProcessAlive: the ledger's liveness check (a
// zombie is not alive) for quiver's state files too.
func processAlive(pid int) bool { return gate.ProcessAlive(pid) }
