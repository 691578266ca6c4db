package builtin

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Names of the builtin tools; never prefixed, so they cannot collide with a
// downstream tool ("__" always separates a prefix).
const (
	SearchToolsName = "search_tools"
	CallToolName    = "call_tool"
	// ReadFileName is the builtin that reads skills, references and files.
	ReadFileName = "read_file"
	// RequestCapabilityName is the builtin a model uses to ask for a grant
	// before a call that would otherwise be refused.
	RequestCapabilityName = "request_capability"
)

// Names are the names of every builtin tool, for a configuration that must
// tell them from downstream tools (registry.ConfigOptions.Reserved).
func Names() []string {
	return []string{SearchToolsName, CallToolName, ReadFileName, RequestCapabilityName}
}

// SearchToolsTool is the definition of search_tools shown to the model.
// Its answers stay small; this text says once how to ask for more (a
// server's tool list, a tool's full schema), so no answer has to.
func SearchToolsTool() mcp.Tool {
	return tool(SearchToolsName,
		"Search every tool quiver can reach (downstream MCP servers and quiver's own) in plain words, "+
			"e.g. \"create a github issue\" or \"k8s pod logs\". Tools found are bound for your next steps: "+
			"call them by the exact name the answer gives; the answer gives their parameters in one line each. "+
			"It also names other likely tools, grouped by server (\"github: merge_pull_request, ...\"); "+
			"those are not bound until you search one's exact name or describe it.",
		`{"type":"object","properties":{`+
			`"query":{"type":"string","maxLength":1000,"description":"What you need to do, in a few words."},`+
			`"kind":{"type":"string","enum":["any","tool","core","mcp","skill","reference"],"description":"Restrict the search: tool (core and mcp), core (quiver's own), mcp (downstream servers), skill, reference, or any (default)."},`+
			`"server":{"type":"string","description":"Only this server's tools, by the name an answer groups them under. Without a query: the names of all its tools."},`+
			`"limit":{"type":"integer","minimum":1,"maximum":10,"description":"How many hits to return (default 5)."},`+
			`"describe":{"type":"string","maxLength":1000,"description":"A tool's exact name, alone: its whole description and full input schema, and it is bound."}`+
			`},"additionalProperties":false}`,
		true)
}

// CallToolTool is the definition of call_tool shown to the model.
func CallToolTool() mcp.Tool {
	return tool(CallToolName,
		"Call a tool that search_tools found, by its exact name, with its arguments as an object. "+
			"Use it when the tool is not in your tool list.",
		`{"type":"object","properties":{`+
			`"name":{"type":"string","description":"The tool's exact name from a search_tools answer, e.g. github__create_issue."},`+
			`"arguments":{"type":"object","description":"The tool's arguments, as described by its input schema."}`+
			`},"required":["name"],"additionalProperties":false}`,
		false)
}

func tool(name, desc, schema string, readOnly bool) mcp.Tool {
	f := false
	return mcp.Tool{
		Name:           name,
		Description:    desc,
		RawInputSchema: json.RawMessage(schema),
		Annotations: mcp.ToolAnnotation{
			ReadOnlyHint:  &readOnly,
			OpenWorldHint: &f,
		},
	}
}
