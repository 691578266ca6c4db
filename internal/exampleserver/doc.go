// Package exampleserver is a small but realistic downstream MCP server that
// quiver ships inside its own binary and runs as `quiver example-server`. It
// exists so that the default servers.yaml works on a fresh machine that has
// nothing but Go installed: a local notes store (notes_add, notes_list,
// notes_read, notes_search, notes_delete), a text search over a directory
// (search_text) and a clock (current_time) give a new user real read, write
// and destructive tools to route, gate and fence. The same server is the
// downstream of quiver's end-to-end tests and benchmarks; with
// [Options.TestTools] it also registers echo, sleep, crash and big, which
// reflect arguments byte for byte, take time, kill the process mid-call and
// produce large outputs. The package owns only these tools and their storage;
// it never talks to the network and never reads anything outside the paths it
// is given.
package exampleserver
