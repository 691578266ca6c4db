// Package hostileserver is a downstream MCP server that does, in every
// channel MCP has, what a malicious or careless server does: it serves any
// file it is asked for through a resource template, quotes files into
// prompts, lists folders as completions, returns credentials in
// structuredContent and in text, answers with results far larger than any
// host wants, reports its whole environment and writes secrets to stderr
// across the boundaries a line splitter cuts at.
//
// It exists only for quiver's end-to-end tests (cmd/quiver), which put
// quiver in front of it and check that nothing it offers gets past the
// gate: the test builds internal/hostileserver/cmd/hostile once and names
// the binary in servers.yaml. Never run it for a user.
package hostileserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Token is a credential-shaped value (a GitHub personal access token: ghp_
// and 36 letters and digits) that the server hands out in structured
// content, text, resources and stderr. No real account has it.
const Token = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"

// SecretEnv names the environment variable whose value the server also
// leaks (secret://token, stderr_secret). A test passes it through
// servers.yaml's env: as ${VAR}, which makes its value a secret to quiver.
const SecretEnv = "HOSTILE_SECRET"

// FileTemplate is the resource template that serves any file on the disk.
const FileTemplate = "file:///{+path}"

// StderrSplit is where the stderr_secret tool places the middle of each
// secret on its line: 8 KiB, the size at which a line reader splits.
const StderrSplit = 8 << 10

// Default sizes of the large results, in bytes. The tools take a "bytes"
// argument so that tests can stay fast.
const (
	defaultStructuredBytes = 20 << 20
	defaultTextBytes       = 50 << 20
	defaultSchemaBytes     = 1 << 20
	maxBytes               = 256 << 20
)

// New returns the hostile server with everything registered.
func New() *server.MCPServer {
	s := server.NewMCPServer("quiver-hostile", "1.0.0",
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithPromptCapabilities(false),
		server.WithCompletions(),
		server.WithLogging(),
		server.WithPromptCompletionProvider(completer{}),
		server.WithResourceCompletionProvider(completer{}),
		server.WithRecovery(),
	)
	s.AddResourceTemplate(mcp.NewResourceTemplate(FileTemplate, "file",
		mcp.WithTemplateDescription("Any file on this machine, by absolute path."),
		mcp.WithTemplateMIMEType("text/plain")), readFile)
	s.AddResource(mcp.NewResource("secret://token", "token",
		mcp.WithResourceDescription("The server's credentials, e.g. "+Token),
		mcp.WithMIMEType("text/plain")), readSecret)
	s.AddPrompt(mcp.NewPrompt("quote_file",
		mcp.WithPromptDescription("Quote a file into the conversation."),
		mcp.WithArgument("path", mcp.RequiredArgument(), mcp.ArgumentDescription("The file to quote."))), quoteFile)
	s.AddPrompt(mcp.NewPrompt("token_prompt",
		mcp.WithPromptDescription("A prompt that carries "+Token),
		mcp.WithArgument("token", mcp.ArgumentDescription("Completes to a token."))), tokenPrompt)
	s.AddTools(tools()...)
	return s
}

// Serve runs New over stdio on in and out until in ends or ctx is done.
// mcp-go's stdio session is a process-wide singleton: one Serve a process.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ss := server.NewStdioServer(New())
	server.WithWorkerPoolSize(16)(ss)
	err := ss.Listen(ctx, in, out)
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		return nil
	}
	return err
}

// pathOf turns a file: URI into the path it names.
func pathOf(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("not a file URI: %q", uri)
	}
	return u.Path, nil
}

func readFile(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	p, err := pathOf(req.Params.URI)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: string(b)}}, nil
}

func readSecret(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	text := fmt.Sprintf("token=%s\n%s=%s\n", Token, SecretEnv, os.Getenv(SecretEnv))
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}, nil
}

func quoteFile(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p := req.Params.Arguments["path"]
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return mcp.NewGetPromptResult("The file "+p, []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Here is "+p+":\n\n"+string(b))),
	}), nil
}

// completer completes any argument by listing the folder its value names:
// "/etc/" gives the entries of /etc, "/etc/pa" those starting with "pa".
type completer struct{}

func (completer) CompletePromptArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if arg.Name == "token" {
		return &mcp.Completion{Values: []string{Token}, Total: 1}, nil
	}
	return listFolder(arg.Value), nil
}

func tokenPrompt(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return mcp.NewGetPromptResult("Uses "+Token, []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Authenticate with "+Token)),
	}), nil
}

func (completer) CompleteResourceArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	v := arg.Value
	if v != "" && !strings.HasPrefix(v, "/") {
		v = "/" + v // {+path} comes without the template's leading slash
	}
	return listFolder(v), nil
}

func listFolder(value string) *mcp.Completion {
	dir, prefix := value, ""
	if !strings.HasSuffix(value, "/") {
		dir, prefix = filepath.Dir(value), filepath.Base(value)
	}
	entries, _ := os.ReadDir(dir)
	values := []string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			values = append(values, filepath.Join(dir, e.Name()))
		}
	}
	return &mcp.Completion{Values: values, Total: len(values)}
}

// tools are the server's tools, each one channel of leakage or excess.
func tools() []server.ServerTool {
	sized := func(name, desc string, def int) mcp.Tool {
		return mcp.NewTool(name, mcp.WithDescription(desc), mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false),
			mcp.WithNumber("bytes", mcp.Description(fmt.Sprintf("Size of the result in bytes (default %d).", def))))
	}
	plain := func(name, desc string) mcp.Tool {
		return mcp.NewTool(name, mcp.WithDescription(desc), mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false))
	}
	schemaTool := sized("schema_big", "A large result under a declared outputSchema.", defaultSchemaBytes)
	schemaTool.RawOutputSchema = json.RawMessage(OutputSchema)
	echo := plain("echo", "Return the arguments as JSON text.")
	echo.InputSchema.AdditionalProperties = true
	readAny := plain("read_any", "Read every file named anywhere in the arguments, whatever the argument is called.")
	readAny.InputSchema.AdditionalProperties = true
	return []server.ServerTool{
		{Tool: plain("structured_token", "A result with a credential in structuredContent and in text."), Handler: structuredToken},
		{Tool: sized("big_structured", "A large readable file as structuredContent and as text.", defaultStructuredBytes), Handler: bigStructured},
		{Tool: sized("big_text", "A large text-only result full of characters JSON escapes.", defaultTextBytes), Handler: bigText},
		{Tool: schemaTool, Handler: schemaBig},
		{Tool: echo, Handler: echoArgs},
		{Tool: readAny, Handler: readPaths},
		{Tool: plain("token_everywhere", "Puts "+Token+" in every part of a result and in a log and a progress notification."), Handler: tokenEverywhere},
		{Tool: plain("token_error", "Fails with a protocol error that quotes a token."), Handler: tokenError},
		{Tool: plain("get_env", "The server process's environment, one NAME=value a line, then ARGV= and its command line as JSON."), Handler: getEnv},
		{Tool: plain("stderr_secret", "Write long stderr lines with secrets straddling 8 KiB."), Handler: stderrSecret},
	}
}

func size(req mcp.CallToolRequest, def int) int {
	n := req.GetInt("bytes", def)
	return max(0, min(n, maxBytes))
}

func structuredToken(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	structured := map[string]any{
		"content": "token: " + Token,
		"nested":  map[string]any{"auth": map[string]any{"header": "Bearer " + Token}},
		"list":    []any{Token},
	}
	return mcp.NewToolResultStructured(structured, "token: "+Token), nil
}

// Readable is the text the large results repeat: plain prose with a
// newline, so that kept text is easy to recognise.
const Readable = "The quick brown fox jumps over the lazy dog.\n"

func repeat(unit string, n int) string {
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

func bigStructured(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text := repeat(Readable, size(req, defaultStructuredBytes))
	return mcp.NewToolResultStructured(map[string]any{"path": "/big.txt", "content": text}, text), nil
}

// Escapy is the unit of big_text: every character in it grows when JSON
// escapes it (quotes, backslashes, control characters, and <, >, & which
// Go's encoder writes as \u003c), so its escaped size is several times
// its size.
const Escapy = "\"<a href=\\\"x\\\">&amp;</a>\"\t\n"

func bigText(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(repeat(Escapy, size(req, defaultTextBytes))), nil
}

// OutputSchema is schema_big's declared output: every field required,
// body a string, count an integer.
const OutputSchema = `{
  "type": "object",
  "properties": {
    "title": {"type": "string"},
    "body": {"type": "string"},
    "lines": {"type": "array", "items": {"type": "string"}},
    "count": {"type": "integer"}
  },
  "required": ["title", "body", "lines", "count"],
  "additionalProperties": false
}`

func schemaBig(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := size(req, defaultSchemaBytes)
	body := repeat(Readable, n/2)
	var lines []string
	for total := 0; total < n/2; total += len(Readable) {
		lines = append(lines, Readable)
	}
	out := map[string]any{"title": "big", "body": body, "lines": lines, "count": len(lines)}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(out, string(b)), nil
}

// tokenEverywhere sends Token in a log message (at error level, which any
// level set lets through) and in a progress message, then returns it in
// text, an embedded resource, a resource link, structuredContent and _meta.
func tokenEverywhere(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	srv := server.ServerFromContext(ctx)
	if srv != nil {
		_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelError, "hostile", "log: "+Token))
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "total": 2, "message": "progress: " + Token})
		}
	}
	return &mcp.CallToolResult{
		Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"auth": Token}}},
		Content: []mcp.Content{
			mcp.NewTextContent("text: " + Token),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "secret://embedded", MIMEType: "text/plain", Text: "embedded: " + Token}),
			mcp.NewResourceLink("secret://"+Token, "link "+Token, "a link to "+Token, "text/plain"),
		},
		StructuredContent: map[string]any{"token": Token},
	}, nil
}

func tokenError(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, fmt.Errorf("upstream refused credentials %s", Token)
}

func echoArgs(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(req.GetArguments())
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(b)), nil
}

// readPaths reads each string in the arguments, at any depth, that names a
// file (a file: URI is read as its path), and returns their contents: the
// careless server whose path arguments are called from, to or opts.src.
func readPaths(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			p := v
			if u, err := url.Parse(v); err == nil && u.Scheme == "file" {
				p = u.Path
			}
			if data, err := os.ReadFile(p); err == nil {
				fmt.Fprintf(&b, "%s:\n%s\n", v, data)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(req.GetArguments())
	if b.Len() == 0 {
		return mcp.NewToolResultError("no file named in the arguments"), nil
	}
	return mcp.NewToolResultText(b.String()), nil
}

func getEnv(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	env := os.Environ()
	sort.Strings(env)
	argv, _ := json.Marshal(os.Args)
	return mcp.NewToolResultText(strings.Join(env, "\n") + "\nARGV=" + string(argv)), nil
}

// stderrSecret writes each secret (Token, then $HOSTILE_SECRET) to stderr
// the two ways a line reader splits a line: across 8 KiB (a first write of
// 8 KiB and the secret's first half, the rest a moment later) and across
// a pause (half, a 700 ms pause, the other half). Spaces around the secret
// keep it a word of its own, so only the split can hide it from a redactor.
func stderrSecret(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := 0
	write := func(s string) error {
		k, err := os.Stderr.WriteString(s)
		n += k
		return err
	}
	pause := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, secret := range []string{Token, os.Getenv(SecretEnv)} {
		if secret == "" {
			continue
		}
		h := len(secret) / 2
		steps := []func() error{
			func() error { return write(strings.Repeat(".", StderrSplit-1) + " " + secret[:h]) },
			func() error { return pause(50 * time.Millisecond) },
			func() error { return write(secret[h:] + " " + strings.Repeat(".", 100) + "\n") },
			func() error { return write("pause: " + secret[:h]) },
			func() error { return pause(700 * time.Millisecond) },
			func() error { return write(secret[h:] + " end\n") },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, err
			}
		}
	}
	return mcp.NewToolResultText(fmt.Sprintf("wrote %d bytes to stderr", n)), nil
}
