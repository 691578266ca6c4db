package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
)

// Read bounds: an answer stays small enough for a model's context.
const (
	DefaultReadLimit = 32 << 10
	MaxReadLimit     = 256 << 10
)

// ReadFileTool is the definition of read_file shown to the model.
func ReadFileTool() mcp.Tool {
	return tool(ReadFileName,
		"Read a skill or reference that search_tools found (its path is in the answer), or a text file inside "+
			"the folders the user allowed. Long files come in pieces: pass offset to continue.",
		`{"type":"object","properties":{`+
			`"path":{"type":"string","description":"The path from a search answer (quiver://skills/...) or an absolute file path."},`+
			`"offset":{"type":"integer","minimum":0,"description":"Byte offset to start at (default 0)."},`+
			`"limit":{"type":"integer","minimum":1,"maximum":262144,"description":"At most this many bytes (default 32768)."}`+
			`},"required":["path"],"additionalProperties":false}`,
		true)
}

// A Library holds the documents quiver indexed (skills and references).
type Library interface {
	Read(path string) ([]byte, bool)
}

// A FileReader reads part of a file on disk after the gate allowed it. On
// refusal it returns the refusal to show the model.
type FileReader interface {
	ReadFile(ctx context.Context, path string, offset, limit int64) (data []byte, size int64, refusal *mcp.CallToolResult)
}

// ReadArgs are read_file's arguments.
type ReadArgs struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Limit  int64  `json:"limit"`
}

// ReadFile runs read_file: a known document first, else a file through fr.
func ReadFile(ctx context.Context, lib Library, fr FileReader, raw json.RawMessage) *mcp.CallToolResult {
	var args ReadArgs
	if err := decodeArgs(raw, &args); err != nil {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf(`read_file takes {"path": "...", "offset": 0, "limit": 32768}; %s.`, plain(err)))
	}
	switch {
	case args.Path == "":
		return Refusal(gate.CodeArgsInvalid, `read_file needs a path: {"path": "quiver://skills/..."} from a search answer, or an absolute file path.`)
	case args.Offset < 0:
		return Refusal(gate.CodeArgsInvalid, "offset must be 0 or more.")
	case args.Limit < 0 || args.Limit > MaxReadLimit:
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("limit must be 1 to %d bytes.", MaxReadLimit))
	case args.Limit == 0:
		args.Limit = DefaultReadLimit
	}
	var data []byte
	var size int64
	if doc, ok := lib.Read(args.Path); ok {
		size = int64(len(doc))
		if args.Offset < size {
			data = doc[args.Offset:min(size, args.Offset+args.Limit)]
		}
	} else {
		var refusal *mcp.CallToolResult
		data, size, refusal = fr.ReadFile(ctx, args.Path, args.Offset, args.Limit)
		if refusal != nil {
			return refusal
		}
	}
	if args.Offset > size {
		return Refusal(gate.CodeArgsInvalid, fmt.Sprintf("offset %d is past the end of %s (%d bytes).", args.Offset, args.Path, size))
	}
	// Cut on a rune boundary so the text stays valid UTF-8.
	for len(data) > 0 && args.Offset+int64(len(data)) < size && !utf8.Valid(data[max(0, len(data)-4):]) {
		data = data[:len(data)-1]
	}
	if !utf8.Valid(data) {
		return Refusal(gate.CodeBinaryFile, fmt.Sprintf("%s is not text; read_file only returns text.", args.Path))
	}
	text := string(data)
	end := args.Offset + int64(len(data))
	if end < size {
		text += fmt.Sprintf("\n[… %d more bytes; call read_file with {\"path\": %q, \"offset\": %d}]", size-end, args.Path, end)
	}
	res := mcp.NewToolResultText(text)
	res.StructuredContent = map[string]any{"path": args.Path, "offset": args.Offset, "bytes": len(data), "size": size}
	return res
}
