package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/gate"
)

// files reads files for read_file, after the gate has decided on the path
// exactly as it would for any downstream read tool.
type files struct{ reqView }

var readFileTool = gate.Tool{Name: builtin.ReadFileName, Class: gate.ClassRead, PathArgs: []string{"path"},
	Schema: builtin.ReadFileTool().RawInputSchema}

func (f files) ReadFile(ctx context.Context, path string, offset, limit int64) ([]byte, int64, *mcp.CallToolResult) {
	args, _ := json.Marshal(map[string]any{"path": path})
	tool := readFileTool
	// read_file runs in quiver itself: a relative path is quiver's, and
	// so is ~.
	if wd, err := os.Getwd(); err == nil {
		tool.Bases = []string{wd}
	}
	tool.Home, _ = os.UserHomeDir()
	call := gate.Call{Session: f.ss.key, Name: tool.Name, Tool: &tool, Visible: true, Args: args, Turn: f.ss.currentTurn(),
		Roots: f.s.relay.sessionRoots(ctx)}
	d, id, input := f.admit(ctx, call, true)
	if input != nil {
		return nil, 0, input // the card, as an input request
	}
	if d.Verdict != gate.Allow {
		return nil, 0, builtin.Refusal(d.Code, d.Reason)
	}
	fail := func(err error) ([]byte, int64, *mcp.CallToolResult) {
		f.s.ended(id, gate.OutcomeError, err.Error())
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, builtin.Refusal(gate.CodeNotFound, fmt.Sprintf("%s does not exist; search_tools answers give the paths of skills, and files must be named by their absolute path.", path))
		}
		return nil, 0, builtin.Refusal(gate.CodeRead, err.Error())
	}
	// Open what the gate resolved (~, file://, .., links), not the text
	// the model wrote.
	real := path
	for _, rp := range d.Resolved {
		if rp.Arg == "path" {
			real = rp.Path
		}
	}
	// Opening a FIFO waits for a writer that may never come (red team:
	// read_file hung on one, and on a file swapped for one between a look
	// and the open), so the open itself must not wait: openNoWait, then
	// the Stat of what was opened says whether it is a file.
	fh, err := openNoWait(real)
	if err != nil {
		return fail(err)
	}
	defer fh.Close()
	// The open followed the path anew: a folder swapped in after the gate
	// looked (another tool's move) leads elsewhere. Check what was opened.
	if err := openedIsJudged(fh, real); err != nil {
		return fail(err)
	}
	info, err := fh.Stat()
	switch {
	case err != nil:
		return fail(err)
	case info.IsDir():
		return fail(fmt.Errorf("%s is a directory; read_file reads files", path))
	case !info.Mode().IsRegular():
		return fail(fmt.Errorf("%s is not a regular file; read_file reads files", path))
	}
	buf := make([]byte, min(limit, max(0, info.Size()-offset)))
	n, err := fh.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	f.s.ended(id, gate.OutcomeOK, "")
	return buf[:n], info.Size(), nil
}
