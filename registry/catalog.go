package registry

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A Tool is one downstream tool as quiver exposes it.
type Tool struct {
	Server  string // server key in servers.yaml
	Name    string // the downstream's own name, used when forwarding
	Exposed string // the name the model sees
	Title   string
	// Description, schemas and annotations as the server sent them.
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  mcp.ToolAnnotation
	// Keywords are the server's keywords from servers.yaml.
	Keywords []string
	// Off is true when the tool is switched off (toggles file or the
	// server's tools_default: off); Toggle says which line decided, ""
	// when nothing did. The zero value is on.
	Off    bool
	Toggle string
	// Digest is the digest of the tool's Definition. Held, when set, says
	// that it differs from the one pinned and no person has accepted it
	// (pin.go): the tool is not listed, found, bound or called.
	Digest string
	Held   *Hold
}

// State is where a downstream server is in its life.
type State string

const (
	StateStarting State = "starting"
	StateUp       State = "up"
	StateDown     State = "down" // failed; retried with backoff
	StateStopped  State = "stopped"
)

// ServerStatus is what quiver knows about one server at one moment.
type ServerStatus struct {
	Name      string
	Transport string
	State     State
	Tools     int
	LastError string // quiver's account of the last failure
	// LastWords is what the child last wrote to stderr before that
	// failure, redacted and bounded: the server's words (and through
	// files it reads, maybe the model's), never quiver's. It is kept
	// apart from LastError so that every place that shows it can quote
	// and label it (Why), and a search answer can leave it out.
	LastWords string
	// WordsFrom says where LastWords came from: WordsStderr, or
	// WordsAnswer (the JSON-RPC error message it answered a request
	// with, as initialize's).
	WordsFrom string
	Restarts  int
	Since     time.Time
	// Title and Instructions are what the server said of itself in
	// initialize (its serverInfo title, else name): search indexes them.
	Title        string
	Instructions string
}

// Why is the last failure as a person or a model reads it: quiver's
// account, then the server's last words on stderr, quoted and labelled
// as the server's.
func (s ServerStatus) Why() string {
	if s.LastWords == "" {
		return s.LastError
	}
	return fmt.Sprintf("%s; %s (the server's words, not quiver's): %q", s.LastError, s.WordsLabel(), s.LastWords)
}

// Where a server's words in a status came from.
const (
	WordsStderr = ""       // what it last wrote on stderr
	WordsAnswer = "answer" // the message of a JSON-RPC error it answered with
)

// WordsLabel is how a place that shows LastWords introduces them.
func (s ServerStatus) WordsLabel() string {
	if s.WordsFrom == WordsAnswer {
		return "its error answer said"
	}
	return "its stderr ended"
}

// A Catalog is an immutable snapshot of every downstream tool. A new one is
// published whenever the set changes; readers keep the one they hold.
type Catalog struct {
	// Gen increases with every snapshot.
	Gen uint64
	// Tools in a stable order: servers as servers.yaml lists them, each
	// server's tools in the order it lists them.
	Tools   []Tool
	Servers []ServerStatus
	// Problems are catalog-level faults quiver refused to paper over, such
	// as two tools that would be exposed under one name.
	Problems []string
	byName   map[string]int
}

// Lookup finds a tool by its exposed name.
func (c *Catalog) Lookup(exposed string) (Tool, bool) {
	if c == nil {
		return Tool{}, false
	}
	i, ok := c.byName[exposed]
	if !ok {
		return Tool{}, false
	}
	return c.Tools[i], true
}

// Status returns the named server's status.
func (c *Catalog) Status(server string) (ServerStatus, bool) {
	for _, s := range c.Servers {
		if s.Name == server {
			return s, true
		}
	}
	return ServerStatus{}, false
}

// NewCatalog builds a catalog from tools as given (their Exposed names must
// be unique), for tests and tools that put one together by hand.
func NewCatalog(gen uint64, tools ...Tool) *Catalog {
	cat := &Catalog{Gen: gen, Tools: tools, byName: map[string]int{}}
	for i, t := range tools {
		cat.byName[t.Exposed] = i
	}
	return cat
}
