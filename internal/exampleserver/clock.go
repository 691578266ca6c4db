package exampleserver

import (
	"context"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // zone names must resolve on machines without a zoneinfo database (Windows, slim containers)

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const currentTimeSchema = `{
  "type": "object",
  "properties": {
    "timezone": {"type": "string", "description": "An IANA time zone name, such as Europe/Paris or America/New_York. Defaults to UTC."}
  },
  "additionalProperties": false
}`

const currentTimeExample = `{"timezone": "Europe/Paris"}`

func currentTimeTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("current_time", "Current time",
			"Return the current date and time in RFC 3339 format for an IANA time zone (UTC unless one is given), with the zone's abbreviation and the day of the week.",
			currentTimeSchema, readOnly()),
		Handler: currentTime,
	}
}

func currentTime(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Timezone string `json:"timezone"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return callError(problem, currentTimeExample), nil
	}
	name := strings.TrimSpace(args.Timezone)
	if name == "" {
		name = "UTC"
	}
	// "Local" is Go's name for the server's own zone, not an IANA name, and
	// an answer that depends on where the server runs would surprise.
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return callError(fmt.Sprintf(
			"Unknown time zone %q. Use an IANA time zone name such as \"Europe/Paris\", \"America/New_York\" or \"UTC\".", name),
			currentTimeExample), nil
	}
	now := time.Now().In(loc).Truncate(time.Second)
	abbrev, _ := now.Zone()
	return mcp.NewToolResultText(fmt.Sprintf("%s\n%s (%s), %s",
		now.Format(time.RFC3339), loc.String(), abbrev, now.Weekday())), nil
}
