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
// Secrets stay in: a stdio child gets a small environment (a default set
// plus what its entry gives or passes through), not quiver's whole one;
// every value that is a secret (from env, headers, a url, a flag like
// --password) is known to Redact, and what registry logs or stores (a
// child's stderr, a server's last error) is redacted before it is kept.
//
// registry never decides whether a call may run and never talks to the
// upstream host; that is the proxy's and the gate's work.
package registry
