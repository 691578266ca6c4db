package exampleserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const (
	defaultMaxResults = 50
	maxMaxResults     = 500
	maxSearchFileSize = 1 << 20 // larger files are skipped
	binarySniffBytes  = 8000    // as git does: a NUL byte in the first 8000 bytes means binary
	maxLineBytes      = 300     // longer matching lines are shortened in the report
)

const searchTextSchema = `{
  "type": "object",
  "properties": {
    "dir": {"type": "string", "minLength": 1, "description": "The directory to search, including its subdirectories. Prefer an absolute path; a relative one is resolved against the server's working directory."},
    "pattern": {"type": "string", "minLength": 1, "description": "A regular expression in RE2 syntax (as used by Go and ripgrep), matched against each line. Start it with (?i) to ignore case."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50, "description": "Stop after this many matching lines (default 50, at most 500)."},
    "glob": {"type": "string", "description": "Only search files whose name matches this glob, such as *.go or *_test.go. A glob containing / is matched against the path relative to dir instead."}
  },
  "required": ["dir", "pattern"],
  "additionalProperties": false
}`

const searchTextExample = `{"dir": "/home/me/project", "pattern": "func \\w+Handler", "glob": "*.go"}`

func searchTextTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("search_text", "Search text files",
			"Search the text files under a directory for lines matching a regular expression and report each one as path:line: text. Binary files, files over 1 MiB, symbolic links and .git and node_modules directories are skipped.",
			searchTextSchema, readOnly()),
		Handler: searchText,
	}
}

// textSearch is one search_text call's state.
type textSearch struct {
	re      *regexp.Regexp
	root    string
	glob    string
	limit   int
	matches []string
	capped  bool
	files   int // text files searched
	binary  int // files skipped as binary
	large   int // files skipped for size
	failed  int // files or directories that could not be read
}

func searchText(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Dir        string `json:"dir"`
		Pattern    string `json:"pattern"`
		MaxResults *int   `json:"max_results"`
		Glob       string `json:"glob"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return callError(problem, searchTextExample), nil
	}
	if args.Dir == "" {
		return callError(`Argument "dir" is required: the directory to search.`, searchTextExample), nil
	}
	if args.Pattern == "" {
		return callError(`Argument "pattern" is required: a regular expression to look for.`, searchTextExample), nil
	}
	re, err := regexp.Compile(args.Pattern)
	if err != nil {
		return callError(fmt.Sprintf(
			"Argument \"pattern\" is not a valid RE2 regular expression (%v). RE2 has no look-around or backreferences; escape characters such as ( [ . with a backslash to match them literally.",
			err), searchTextExample), nil
	}
	limit := defaultMaxResults
	if args.MaxResults != nil {
		limit = *args.MaxResults
		if limit < 1 || limit > maxMaxResults {
			return callError(fmt.Sprintf(`Argument "max_results" must be between 1 and %d, not %d.`, maxMaxResults, limit), searchTextExample), nil
		}
	}
	if _, err := path.Match(args.Glob, ""); err != nil {
		return callError(fmt.Sprintf(`Argument "glob" is not a valid glob (%q): use *, ? and [...], as in *.go.`, args.Glob), searchTextExample), nil
	}
	root := filepath.Clean(args.Dir)
	info, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return callError(fmt.Sprintf("Directory %q does not exist.", args.Dir), searchTextExample), nil
	case err != nil:
		return mcp.NewToolResultError(fmt.Sprintf("Directory %q cannot be read (%v).", args.Dir, err)), nil
	case !info.IsDir():
		return callError(fmt.Sprintf("%q is a file, not a directory; pass the directory that holds it and pick the file with glob.", args.Dir), searchTextExample), nil
	}

	s := &textSearch{re: re, root: root, glob: args.Glob, limit: limit}
	if err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		return s.visit(ctx, p, d, err)
	}); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("search_text cancelled: %w", ctx.Err())
		}
		return mcp.NewToolResultError(fmt.Sprintf("Directory %q cannot be searched (%v).", args.Dir, err)), nil
	}
	return mcp.NewToolResultText(s.report(args.Pattern)), nil
}

func (s *textSearch) visit(ctx context.Context, p string, d fs.DirEntry, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil {
		if p == s.root {
			return err
		}
		s.failed++
		if d != nil && d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	if d.IsDir() {
		if p != s.root && (d.Name() == ".git" || d.Name() == "node_modules") {
			return fs.SkipDir
		}
		return nil
	}
	// Symbolic links are not followed: one could lead outside dir.
	if !d.Type().IsRegular() || !s.wanted(p) {
		return nil
	}
	info, err := d.Info()
	if err != nil {
		s.failed++
		return nil
	}
	if info.Size() > maxSearchFileSize {
		s.large++
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		s.failed++
		return nil
	}
	if bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0 {
		s.binary++
		return nil
	}
	s.files++
	for n := 1; len(data) > 0; n++ {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !s.re.Match(line) {
			continue
		}
		if len(s.matches) == s.limit {
			s.capped = true
			return fs.SkipAll
		}
		s.matches = append(s.matches, fmt.Sprintf("%s:%d: %s", p, n, shorten(line)))
	}
	return nil
}

// wanted reports whether the file at p passes the glob.
func (s *textSearch) wanted(p string) bool {
	if s.glob == "" {
		return true
	}
	name := filepath.Base(p)
	if strings.Contains(s.glob, "/") {
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return false
		}
		name = filepath.ToSlash(rel)
	}
	ok, _ := path.Match(s.glob, name)
	return ok
}

// shorten cuts a long line at a character boundary.
func shorten(line []byte) string {
	if len(line) <= maxLineBytes {
		return string(line)
	}
	cut := maxLineBytes
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut]) + " …"
}

func (s *textSearch) report(pattern string) string {
	var b strings.Builder
	if len(s.matches) == 0 {
		fmt.Fprintf(&b, "No line matches %q under %s (%s searched).", pattern, s.root, count(s.files, "text file"))
	} else {
		b.WriteString(strings.Join(s.matches, "\n"))
		b.WriteString("\n\n")
		if s.capped {
			fmt.Fprintf(&b, "Stopped after %s; there are more. Narrow the pattern or glob, or raise max_results (at most %d).",
				count(len(s.matches), "matching line"), maxMaxResults)
		} else {
			fmt.Fprintf(&b, "%s in %s searched.", count(len(s.matches), "matching line"), count(s.files, "text file"))
		}
	}
	var skipped []string
	if s.binary > 0 {
		skipped = append(skipped, count(s.binary, "binary file"))
	}
	if s.large > 0 {
		skipped = append(skipped, fmt.Sprintf("%s over 1 MiB", count(s.large, "file")))
	}
	if s.failed > 0 {
		skipped = append(skipped, count(s.failed, "unreadable path"))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, " Skipped %s.", strings.Join(skipped, ", "))
	}
	return b.String()
}
