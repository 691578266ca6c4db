package exampleserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Limits on what a note may hold. They keep the notes file small enough to
// read on every call.
const (
	maxTitleChars = 200
	maxBodyChars  = 100_000
	maxTags       = 20
	maxTagChars   = 50
)

// A note is one saved note. IDs are "n" followed by a counter that never
// goes back, so a deleted note's id is never reused.
type note struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Body    string    `json:"body"`
	Tags    []string  `json:"tags"`
	Created time.Time `json:"created"`
}

// notesDoc is the notes file's content.
type notesDoc struct {
	NextID int    `json:"next_id"`
	Notes  []note `json:"notes"`
}

// noteStore owns the notes. It reads the file on every call and writes it
// atomically on every change, so servers in several processes (or several
// New calls) that share a file see each other's notes; the mutex serialises
// the calls of one server, and two processes writing at the same instant can
// still lose one of the writes.
type noteStore struct {
	path   string // "" keeps the notes in mem
	logger *slog.Logger
	now    func() time.Time

	mu  sync.Mutex
	mem notesDoc
}

// A corruptNotesError says the notes file exists but cannot be trusted.
type corruptNotesError struct {
	path   string
	reason string
}

func (e *corruptNotesError) Error() string {
	return fmt.Sprintf("notes file %s is damaged: %s", e.path, e.reason)
}

// load returns the current notes. A missing or blank file holds no notes; a
// file that is not a valid notes document is a *corruptNotesError and is
// never overwritten.
func (s *noteStore) load() (notesDoc, error) {
	if s.path == "" {
		return notesDoc{NextID: max(s.mem.NextID, 1), Notes: slices.Clone(s.mem.Notes)}, nil
	}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return notesDoc{NextID: 1}, nil
	}
	if err != nil {
		return notesDoc{}, fmt.Errorf("read notes file: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return notesDoc{NextID: 1}, nil
	}
	var doc notesDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return notesDoc{}, &corruptNotesError{path: s.path, reason: describeJSONError(data, err)}
	}
	seen := make(map[string]bool, len(doc.Notes))
	for i, n := range doc.Notes {
		num, ok := parseNoteID(n.ID)
		if !ok {
			return notesDoc{}, &corruptNotesError{path: s.path,
				reason: fmt.Sprintf("note %d has id %q, but ids look like n1, n2, …", i+1, n.ID)}
		}
		if seen[n.ID] {
			return notesDoc{}, &corruptNotesError{path: s.path,
				reason: fmt.Sprintf("id %q is used by more than one note", n.ID)}
		}
		seen[n.ID] = true
		doc.NextID = max(doc.NextID, num+1)
	}
	doc.NextID = max(doc.NextID, 1)
	return doc, nil
}

// save replaces the notes with doc.
func (s *noteStore) save(doc notesDoc) error {
	if s.path == "" {
		s.mem = doc
		return nil
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode notes: %w", err)
	}
	return writeFileAtomic(s.path, append(data, '\n'))
}

// writeFileAtomic writes data to a temporary file beside path, flushes it to
// disk and renames it over path, so a reader sees the old file or the new
// one, never a torn write. Missing parent directories are created. The file
// is private to the user (mode 0600), as os.CreateTemp makes it.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create notes directory: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary notes file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write notes: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("flush notes: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close notes: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace notes file: %w", err)
	}
	// Make the rename itself durable. Not every system can sync a
	// directory, and the data is already safe in the new file, so a failure
	// here is not reported.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// describeJSONError explains a decoding failure with a position a person
// can find in an editor.
func describeJSONError(data []byte, err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		line := 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("it is not valid JSON (%v, line %d)", err, line)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf("it is not a notes document (%v)", err)
	}
	return err.Error()
}

func parseNoteID(id string) (int, bool) {
	digits, ok := strings.CutPrefix(id, "n")
	if !ok || digits == "" || digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n > 0
}

// storeError turns a storage failure into the tool result the model sees.
func (s *noteStore) storeError(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	var corrupt *corruptNotesError
	if errors.As(err, &corrupt) {
		s.logger.WarnContext(ctx, "notes file is damaged", "tool", tool, "path", corrupt.path, "reason", corrupt.reason)
		return mcp.NewToolResultError(fmt.Sprintf(
			"The notes file %s is damaged: %s. It has been left untouched; repair or move it away and try again.",
			corrupt.path, corrupt.reason))
	}
	s.logger.WarnContext(ctx, "notes storage failed", "tool", tool, "path", s.path, "error", err)
	return mcp.NewToolResultError(fmt.Sprintf("The notes could not be stored or read (%v). Try again later.", err))
}

const notesAddSchema = `{
  "type": "object",
  "properties": {
    "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "A short, single-line title for the note."},
    "body": {"type": "string", "maxLength": 100000, "description": "The text of the note, in plain text or Markdown."},
    "tags": {"type": "array", "maxItems": 20, "items": {"type": "string", "minLength": 1, "maxLength": 50}, "description": "Optional labels for grouping and filtering notes, such as \"work\" or \"recipes\"."}
  },
  "required": ["title", "body"],
  "additionalProperties": false
}`

const notesAddExample = `{"title": "Groceries", "body": "eggs, milk, coffee", "tags": ["home"]}`

func (s *noteStore) addTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("notes_add", "Add note",
			"Save a new note with a title, a body and optional tags. Returns the new note's id (such as n3), which notes_read and notes_delete take.",
			notesAddSchema, hints{}),
		Handler: s.add,
	}
}

func (s *noteStore) add(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Title *string  `json:"title"`
		Body  *string  `json:"body"`
		Tags  []string `json:"tags"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return callError(problem, notesAddExample), nil
	}
	if args.Title == nil || args.Body == nil {
		return callError(`notes_add needs both "title" and "body".`, notesAddExample), nil
	}
	title := strings.TrimSpace(*args.Title)
	switch {
	case title == "":
		return callError(`Argument "title" must not be empty.`, notesAddExample), nil
	case strings.ContainsAny(title, "\r\n"):
		return callError(`Argument "title" must be a single line; put longer text in "body".`, notesAddExample), nil
	case utf8.RuneCountInString(title) > maxTitleChars:
		return callError(fmt.Sprintf(`Argument "title" is longer than %d characters; put longer text in "body".`, maxTitleChars), notesAddExample), nil
	case utf8.RuneCountInString(*args.Body) > maxBodyChars:
		return callError(fmt.Sprintf(`Argument "body" is longer than %d characters; split it into several notes.`, maxBodyChars), notesAddExample), nil
	}
	tags, problem := cleanTags(args.Tags)
	if problem != "" {
		return callError(problem, notesAddExample), nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := s.load()
	if err != nil {
		return s.storeError(ctx, "notes_add", err), nil
	}
	n := note{
		ID:      "n" + strconv.Itoa(doc.NextID),
		Title:   title,
		Body:    *args.Body,
		Tags:    tags,
		Created: s.now().UTC().Truncate(time.Second),
	}
	doc.NextID++
	doc.Notes = append(doc.Notes, n)
	if err := s.save(doc); err != nil {
		return s.storeError(ctx, "notes_add", err), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("Saved note %s %q.", n.ID, n.Title)), nil
}

// cleanTags trims the tags and drops repeats, ignoring case.
func cleanTags(in []string) ([]string, string) {
	if len(in) > maxTags {
		return nil, fmt.Sprintf(`Argument "tags" has %d tags; a note can have at most %d.`, len(in), maxTags)
	}
	out := make([]string, 0, len(in))
	for _, t := range in {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			return nil, `Argument "tags" contains an empty tag; leave it out.`
		case utf8.RuneCountInString(t) > maxTagChars:
			return nil, fmt.Sprintf(`Tag %q is longer than %d characters.`, t, maxTagChars)
		case strings.ContainsAny(t, "\r\n"):
			return nil, fmt.Sprintf(`Tag %q must be a single line.`, t)
		}
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, t) }) {
			out = append(out, t)
		}
	}
	return out, ""
}

const notesListSchema = `{
  "type": "object",
  "properties": {
    "tag": {"type": "string", "description": "Only list notes carrying this tag (case-insensitive). Omit to list every note."}
  },
  "additionalProperties": false
}`

const notesListExample = `{"tag": "home"}`

func (s *noteStore) listTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("notes_list", "List notes",
			"List the saved notes, oldest first, with each note's id, creation time, title and tags. Pass tag to list only the notes carrying that tag.",
			notesListSchema, readOnly()),
		Handler: s.list,
	}
}

func (s *noteStore) list(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Tag string `json:"tag"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return callError(problem, notesListExample), nil
	}
	tag := strings.TrimSpace(args.Tag)
	s.mu.Lock()
	doc, err := s.load()
	s.mu.Unlock()
	if err != nil {
		return s.storeError(ctx, "notes_list", err), nil
	}
	var picked []note
	for _, n := range doc.Notes {
		if tag == "" || slices.ContainsFunc(n.Tags, func(t string) bool { return strings.EqualFold(t, tag) }) {
			picked = append(picked, n)
		}
	}
	switch {
	case len(doc.Notes) == 0:
		return mcp.NewToolResultText("There are no notes yet. Save one with notes_add."), nil
	case len(picked) == 0:
		return mcp.NewToolResultText(fmt.Sprintf("No note is tagged %q.", tag)), nil
	case tag == "":
		return mcp.NewToolResultText(summarise(picked, fmt.Sprintf("%s:", count(len(picked), "note")))), nil
	default:
		return mcp.NewToolResultText(summarise(picked, fmt.Sprintf("%s tagged %q:", count(len(picked), "note"), tag))), nil
	}
}

// summarise renders one line per note under a heading.
func summarise(notes []note, heading string) string {
	var b strings.Builder
	b.WriteString(heading)
	for _, n := range notes {
		fmt.Fprintf(&b, "\n%s  %s  %s", n.ID, n.Created.Format(time.RFC3339), n.Title)
		if len(n.Tags) > 0 {
			fmt.Fprintf(&b, "  [%s]", strings.Join(n.Tags, ", "))
		}
	}
	return b.String()
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

const noteIDSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "pattern": "^n[1-9][0-9]*$", "description": "The note's id, such as n3, as returned by notes_add, notes_list or notes_search."}
  },
  "required": ["id"],
  "additionalProperties": false
}`

const noteIDExample = `{"id": "n3"}`

func (s *noteStore) readTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("notes_read", "Read note",
			"Return one note in full: its title, tags, creation time and body.",
			noteIDSchema, readOnly()),
		Handler: s.read,
	}
}

// noteID decodes the {id} arguments of notes_read and notes_delete.
func noteID(req mcp.CallToolRequest) (string, *mcp.CallToolResult) {
	var args struct {
		ID string `json:"id"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return "", callError(problem, noteIDExample)
	}
	id := strings.TrimSpace(args.ID)
	if id == "" {
		return "", callError(`Argument "id" is required.`, noteIDExample)
	}
	if _, ok := parseNoteID(id); !ok {
		return "", callError(fmt.Sprintf(`%q is not a note id; ids look like n3.`, id), noteIDExample)
	}
	return id, nil
}

func notFound(id string) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf("There is no note with id %q. Call notes_list to see the ids of the saved notes.", id))
}

func (s *noteStore) read(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, bad := noteID(req)
	if bad != nil {
		return bad, nil
	}
	s.mu.Lock()
	doc, err := s.load()
	s.mu.Unlock()
	if err != nil {
		return s.storeError(ctx, "notes_read", err), nil
	}
	i := slices.IndexFunc(doc.Notes, func(n note) bool { return n.ID == id })
	if i < 0 {
		return notFound(id), nil
	}
	n := doc.Notes[i]
	tags := "(none)"
	if len(n.Tags) > 0 {
		tags = strings.Join(n.Tags, ", ")
	}
	return mcp.NewToolResultText(fmt.Sprintf("id: %s\ntitle: %s\ntags: %s\ncreated: %s\n\n%s",
		n.ID, n.Title, tags, n.Created.Format(time.RFC3339), n.Body)), nil
}

const notesSearchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "description": "Words to look for; a note matches when its title, body or tags contain every word, ignoring case."}
  },
  "required": ["query"],
  "additionalProperties": false
}`

const notesSearchExample = `{"query": "coffee beans"}`

func (s *noteStore) searchTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("notes_search", "Search notes",
			"Find the notes whose title, body or tags contain every word of the query, ignoring case. Returns one summary line per note, as notes_list does.",
			notesSearchSchema, readOnly()),
		Handler: s.search,
	}
}

func (s *noteStore) search(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Query string `json:"query"`
	}
	if problem := decodeArgs(req, &args); problem != "" {
		return callError(problem, notesSearchExample), nil
	}
	words := strings.Fields(strings.ToLower(args.Query))
	if len(words) == 0 {
		return callError(`Argument "query" must contain at least one word.`, notesSearchExample), nil
	}
	s.mu.Lock()
	doc, err := s.load()
	s.mu.Unlock()
	if err != nil {
		return s.storeError(ctx, "notes_search", err), nil
	}
	var picked []note
	for _, n := range doc.Notes {
		text := strings.ToLower(n.Title + "\n" + n.Body + "\n" + strings.Join(n.Tags, "\n"))
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(text, w) }) {
			picked = append(picked, n)
		}
	}
	query := strings.Join(strings.Fields(args.Query), " ")
	if len(picked) == 0 {
		return mcp.NewToolResultText(fmt.Sprintf("No note matches %q.", query)), nil
	}
	verb := "match"
	if len(picked) == 1 {
		verb = "matches"
	}
	return mcp.NewToolResultText(summarise(picked, fmt.Sprintf("%s %s %q:", count(len(picked), "note"), verb, query))), nil
}

func (s *noteStore) deleteTool() server.ServerTool {
	return server.ServerTool{
		Tool: newTool("notes_delete", "Delete note",
			"Delete one note permanently; this cannot be undone. Read it first with notes_read if you are not sure it is the right one.",
			noteIDSchema, hints{destructive: true, idempotent: true}),
		Handler: s.delete,
	}
}

func (s *noteStore) delete(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, bad := noteID(req)
	if bad != nil {
		return bad, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := s.load()
	if err != nil {
		return s.storeError(ctx, "notes_delete", err), nil
	}
	i := slices.IndexFunc(doc.Notes, func(n note) bool { return n.ID == id })
	if i < 0 {
		return notFound(id), nil
	}
	gone := doc.Notes[i]
	doc.Notes = slices.Delete(doc.Notes, i, i+1)
	if err := s.save(doc); err != nil {
		return s.storeError(ctx, "notes_delete", err), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("Deleted note %s %q.", gone.ID, gone.Title)), nil
}
