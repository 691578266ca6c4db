// Package builtin holds quiver's own tools: search_tools, which finds
// downstream tools and binds them for the session that asked, and call_tool,
// which calls a bound tool by name for hosts that never re-read tools/list.
//
// Each handler asks for the small capabilities it needs (a Searcher, a
// Binder, a Caller), defined here, so it never depends on how the proxy
// keeps its sessions. builtin decides nothing about policy: every call it
// makes goes through the same gate as a direct tools/call.
package builtin
