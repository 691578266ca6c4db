// Package skills loads the instruction files quiver ships (embedded) and
// those in folders named in servers.yaml (skills.dirs): markdown with a
// front matter that names and describes them.
//
// A skill tells a model how to do something with the tools it can reach; a
// reference is material to consult. Both are indexed for search_tools and
// read with read_file; neither is ever bound like a tool. skills only reads
// and parses files; what may be read is the gate's business.
package skills
