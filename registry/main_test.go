package registry

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/exampleserver"
)

// The test binary doubles as the downstream servers the runtime tests start:
// with childEnv set it serves MCP on stdin and stdout instead of running the
// tests. The values:
//
//	"1"            the example server with its test tools (echo, sleep, crash, big)
//	"listchanged"  a tiny server with tool "first" that adds tool "second"
//	               after the first tools/list, delayed by childDelayEnv
//	"idle"         no MCP at all: write the pid and wait to be killed (the
//	               grandchild of the process-group test)
//	"dying"        no MCP at all: print childStderrEnv's line without a
//	               newline and exit 1, as a server missing its token does
//	"env"          a server with one tool, environ, that answers with its
//	               environment, one variable a line (server-everything's
//	               get-env)
//	"stderr"       no MCP at all: write childStderrEnv's value to stderr
//	               in the pieces "|" separates, pausing childDelayEnv
//	               between them, then wait to be killed
//
// Other variables shape what a child does:
//
//	childPidDirEnv      write <dir>/<pid> at start and <dir>/<pid>.clean after
//	                    a clean stop (stdin closed)
//	childStderrEnv      print this line to stderr at start
//	childGrandchildEnv  start an "idle" grandchild in the same process group
//	childNotesEnv       the example server's notes file
//	childGateEnv        wait until this file exists before serving (a slow start)
const (
	childEnv           = "QUIVER_REGISTRY_TEST_SERVER"
	childPidDirEnv     = "QUIVER_REGISTRY_TEST_PIDDIR"
	childStderrEnv     = "QUIVER_REGISTRY_TEST_STDERR"
	childGrandchildEnv = "QUIVER_REGISTRY_TEST_GRANDCHILD"
	childNotesEnv      = "QUIVER_REGISTRY_TEST_NOTES"
	childDelayEnv      = "QUIVER_REGISTRY_TEST_DELAY"
	childGateEnv       = "QUIVER_REGISTRY_TEST_GATE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	// A child built with -race sleeps a second before it exits (the race
	// runtime's atexit_sleep_ms), which would make every Close slow.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

func runChild(mode string) int {
	dir := os.Getenv(childPidDirEnv)
	if dir != "" {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
	}
	if line := os.Getenv(childStderrEnv); line != "" && mode != "stderr" {
		if mode == "dying" {
			fmt.Fprint(os.Stderr, line)
			return 1
		}
		fmt.Fprintln(os.Stderr, line)
	}
	if os.Getenv(childGrandchildEnv) == "1" {
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), childEnv+"=idle", childGrandchildEnv+"=")
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "child: start grandchild:", err)
			return 1
		}
		// Not waited for: it must outlive this process unless someone
		// sweeps the group.
	}
	if gate := os.Getenv(childGateEnv); gate != "" {
		for {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	ctx := context.Background()
	var err error
	switch mode {
	case "1":
		err = exampleserver.Serve(ctx, exampleserver.Options{NotesFile: os.Getenv(childNotesEnv), TestTools: true}, os.Stdin, os.Stdout)
	case "listchanged":
		err = serveListChanged(ctx)
	case "listflood":
		err = serveListFlood(ctx)
	case "env":
		s := server.NewMCPServer("env", "1", server.WithToolCapabilities(false))
		s.AddTool(mcp.NewToolWithRawSchema("environ", "The server's environment.", []byte(`{"type":"object"}`)),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(strings.Join(os.Environ(), "\n")), nil
			})
		err = server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout)
	case "stderr":
		delay, _ := time.ParseDuration(os.Getenv(childDelayEnv))
		for i, piece := range strings.Split(os.Getenv(childStderrEnv), "|") {
			if i > 0 {
				time.Sleep(delay)
			}
			os.Stderr.WriteString(piece)
		}
		time.Sleep(time.Minute)
		return 0
	case "idle":
		time.Sleep(time.Minute) // bounded, so a failed test leaks nothing for long
		return 0
	default:
		fmt.Fprintf(os.Stderr, "child: unknown mode %q\n", mode)
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	if dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())+".clean"), nil, 0o644)
	}
	return 0
}

// serveListFlood sends 2,000 tools/list_changed right after the first
// tools/list, and answers its tool "lists" with how many lists it served.
func serveListFlood(ctx context.Context) error {
	hooks := &server.Hooks{}
	s := server.NewMCPServer("listflood", "1", server.WithToolCapabilities(true), server.WithHooks(hooks))
	var lists atomic.Int64
	var once sync.Once
	hooks.AddAfterListTools(func(context.Context, any, *mcp.ListToolsRequest, *mcp.ListToolsResult) {
		lists.Add(1)
		once.Do(func() {
			go func() {
				for range 2000 {
					s.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
				}
			}()
		})
	})
	s.AddTool(mcp.NewToolWithRawSchema("lists", "How many tools/list it answered.", []byte(`{"type":"object"}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strconv.FormatInt(lists.Load(), 10)), nil
		})
	return server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout)
}

// serveListChanged serves tool "first" and, once the first tools/list has
// been answered and childDelayEnv has passed, adds tool "second"; AddTool
// broadcasts notifications/tools/list_changed. With a delay of 0 the tool is
// added inside the hook, so the notification races the list's answer.
func serveListChanged(ctx context.Context) error {
	delay, _ := time.ParseDuration(os.Getenv(childDelayEnv))
	hooks := &server.Hooks{}
	s := server.NewMCPServer("listchanged", "1", server.WithToolCapabilities(true), server.WithHooks(hooks))
	answer := func(text string) server.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(text), nil
		}
	}
	var once sync.Once
	hooks.AddAfterListTools(func(context.Context, any, *mcp.ListToolsRequest, *mcp.ListToolsResult) {
		once.Do(func() {
			add := func() {
				s.AddTool(mcp.NewToolWithRawSchema("second", "Added later.", []byte(`{"type":"object","description":"late"}`)), answer("second"))
			}
			if delay <= 0 {
				add()
				return
			}
			time.AfterFunc(delay, add)
		})
	})
	s.AddTool(mcp.NewToolWithRawSchema("first", "There from the start.", []byte(`{"type":"object"}`)), answer("first"))
	return server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout)
}
