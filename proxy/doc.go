// Package proxy is quiver's upstream face: one MCP server that a host
// connects to, in front of every downstream server the registry runs.
//
// A Server owns the sessions and what each one sees: quiver's builtins and
// the always-on tools in a fixed order, then the tools this turn's slash
// command forced, then the tools its own searches bound, oldest first, so
// that a discovery only appends to the list and a fixed session state
// always lists the same bytes. Each session has a turn clock (an explicit
// _meta["quiver/turn"] on any request, a prompts/get, or an idle gap) that
// bounds how long bindings, forced tools and activities last. Every
// tools/call, direct or through call_tool, takes one path: resolve, gate,
// forward.
//
// proxy is the only package that knows the registry, the index, the gate and
// the builtins; they know nothing of it.
package proxy
