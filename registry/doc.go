// Package registry owns quiver's downstream side: it reads servers.yaml,
// keeps one MCP client per configured server, and publishes an immutable
// Catalog snapshot every time the set of downstream tools changes.
//
// Servers start in parallel in the background and are restarted with backoff
// when they fail, so a slow or broken server never holds up the others or
// quiver's own answers. Tool schemas are kept byte for byte as the server
// sent them (mcp-go's typed ListTools drops keywords), and arguments are
// forwarded raw.
//
// registry never decides whether a call may run and never talks to the
// upstream host; that is the proxy's and the gate's work.
package registry
