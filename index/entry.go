package index

import (
	"encoding/json"
	"maps"
	"slices"
)

// Kind is what an entry is: quiver's own tool, a downstream MCP tool, a skill
// or a reference document.
type Kind string

// The kinds of entries. Callers translate "tool" to core+mcp and "any" to all.
const (
	KindCore      Kind = "core"
	KindMCP       Kind = "mcp"
	KindSkill     Kind = "skill"
	KindReference Kind = "reference"
)

// Param is one argument of a tool's input schema.
type Param struct {
	Name, Description string
}

// Entry is one searchable thing. Only Name must be set and unique.
type Entry struct {
	Name        string   // exposed, unique: "github__create_issue", or a skill's name
	Kind        Kind     // what the entry is; filters searches
	Server      string   // server key ("github"); "" for core and skills
	Title       string   // optional human title (annotations.title / skill title)
	Description string   // the tool's or skill's description
	Keywords    []string // the server's keywords from servers.yaml, or a skill's front-matter keywords
	Params      []Param  // use ParamsFromSchema
	ReadOnly    bool     // from annotations (untrusted hint; a small signal at most)
	Headings    []string // skills/references: markdown headings
	Path        string   // skills/references: path to read with read_file

	// What the server says about itself, from initialize and its lists.
	// The proxy sets the same values on every entry of a server; Build
	// reads them once per server, into the server's document (they rank
	// the server, not each of its tools).
	ServerTitle        string   // serverInfo.title, else serverInfo.name
	ServerInstructions string   // initialize's instructions
	ServerExtras       []string // names (and titles) of the server's prompts and resources
}

// schemaNode is the part of a JSON schema ParamsFromSchema reads.
type schemaNode struct {
	Description string                     `json:"description"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Items       json.RawMessage            `json:"items"`
}

// ParamsFromSchema extracts top-level (and one level of nested object)
// property names and descriptions from a raw JSON schema; never fails (bad
// JSON -> nil). Nested properties are named "parent.child" so that both words
// reach the index. The order is sorted by name so that the same schema always
// gives the same entry.
func ParamsFromSchema(raw json.RawMessage) []Param {
	var root schemaNode
	if len(raw) == 0 || json.Unmarshal(raw, &root) != nil {
		return nil
	}
	var out []Param
	for _, name := range slices.Sorted(maps.Keys(root.Properties)) {
		var prop schemaNode
		if json.Unmarshal(root.Properties[name], &prop) != nil {
			out = append(out, Param{Name: name})
			continue
		}
		out = append(out, Param{Name: name, Description: prop.Description})
		nested := prop.Properties
		if len(nested) == 0 && len(prop.Items) > 0 {
			// An array of objects: its item properties are as telling as an
			// object's.
			var item schemaNode
			if json.Unmarshal(prop.Items, &item) == nil {
				nested = item.Properties
			}
		}
		for _, child := range slices.Sorted(maps.Keys(nested)) {
			var c schemaNode
			_ = json.Unmarshal(nested[child], &c) // a bad child still gives its name
			out = append(out, Param{Name: name + "." + child, Description: c.Description})
		}
	}
	return out
}
