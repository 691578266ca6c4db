package exampleserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// name and version identify the server in the initialize result.
const (
	name    = "quiver-example"
	version = "1.0.0"
)

// The stdio limits Serve sets. mcp-go's defaults (5 workers, a queue of 100)
// serialise the sixth concurrent tools/call, and a full queue runs the call on
// the read loop; end-to-end tests and benchmarks fire many calls at once.
const (
	stdioWorkers   = 32
	stdioQueueSize = 1000
)

const instructions = "Local tools for trying out an MCP host: keep short notes " +
	"(notes_add, notes_list, notes_read, notes_search, notes_delete), search the text " +
	"files under a directory with a regular expression (search_text), and read the " +
	"current time in any IANA time zone (current_time). Nothing here uses the network."

// Options configures the example server. The zero value is usable: notes are
// kept in memory, no test tools are registered and nothing is logged.
type Options struct {
	// NotesFile is the JSON file that holds the notes. It is created, with its
	// parent directories, on the first write. Empty keeps the notes in memory
	// for the life of the server.
	NotesFile string
	// TestTools also registers echo, sleep, crash and big, the tools quiver's
	// end-to-end tests and benchmarks drive. Never enable them for a user.
	TestTools bool
	// Logger receives one debug line per tool call and warnings about the
	// notes file. Nil discards everything.
	Logger *slog.Logger
}

// New returns the MCP server with its tools registered. It does no I/O: the
// notes file is read on each notes call, so a missing or damaged file shows
// up as a tool error rather than a failure to start.
func New(opts Options) *server.MCPServer {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := server.NewMCPServer(name, version,
		server.WithToolCapabilities(false), // the tool list never changes
		server.WithInstructions(instructions),
		server.WithToolHandlerMiddleware(logCalls(logger)), // outermost: also logs recovered panics
		server.WithRecovery(),
	)
	notes := &noteStore{path: opts.NotesFile, logger: logger, now: time.Now}
	tools := []server.ServerTool{
		notes.addTool(),
		notes.listTool(),
		notes.readTool(),
		notes.searchTool(),
		notes.deleteTool(),
		searchTextTool(),
		currentTimeTool(),
	}
	if opts.TestTools {
		tools = append(tools,
			echoTool(),
			sleepTool(logger),
			crashTool(logger),
			bigTool(),
		)
	}
	s.AddTools(tools...)
	return s
}

// Serve runs New(opts) over stdio on in and out until ctx ends or in reaches
// EOF; either is a clean stop and returns nil. Any other read or write error
// is returned. It raises mcp-go's stdio worker pool to 32 and its queue to
// 1000 so that concurrent calls never serialise.
//
// EOF on in cancels the calls still running (mcp-go takes it as the client
// going away), and Serve waits for them before it returns. When ctx ends, a
// goroutine of mcp-go's stays blocked reading in until in is closed or
// yields a line. mcp-go's stdio session is a process-wide singleton, so run
// at most one Serve per process at a time.
func Serve(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts.Logger = logger
	ss := server.NewStdioServer(New(opts))
	// The error logger must be set first: the size options log through it.
	server.WithErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))(ss)
	server.WithWorkerPoolSize(stdioWorkers)(ss)
	server.WithQueueSize(stdioQueueSize)(ss)
	err := ss.Listen(ctx, in, out)
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		return nil
	}
	return err
}

// logCalls logs every tool call at debug level with its outcome.
func logCalls(logger *slog.Logger) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start := time.Now()
			res, err := next(ctx, req)
			outcome := "ok"
			switch {
			case err != nil:
				outcome = "error"
			case res != nil && res.IsError:
				outcome = "error_result"
			}
			attrs := []any{"tool", req.Params.Name, "outcome", outcome, "duration", time.Since(start)}
			if err != nil {
				attrs = append(attrs, "error", err)
			}
			logger.DebugContext(ctx, "tool call", attrs...)
			return res, err
		}
	}
}
