package gate

import (
	"encoding/json"
	"io"
	"sort"
	"strings"
	"unicode"
)

// pathKeyWords are argument names that carry paths, alone or as the last
// word of a longer name (output_path, outputPath, work-dir, file_name).
var pathKeyWords = []string{
	"path", "paths", "pathname", "pathnames", "file", "files", "filename", "filenames", "filepath",
	"dir", "dirs", "directory", "directories", "folder", "folders",
	"cwd", "root", "roots", "source", "sources", "destination", "destinations",
	"target", "targets", "src", "dst", "dest", "workdir",
	"uri", "uris", "location", "project", "workspace", "repository", "notebook",
}

// pathSuffixes end names written as one lowercase word (inputfile,
// outputdir, basepath); notPathNames are such words that are not paths.
var (
	pathSuffixes = []string{"file", "files", "path", "paths", "dir", "dirs", "folder", "directory"}
	notPathNames = []string{"profile", "profiles", "xpath", "jsonpath"}
	// onlyPathNames are paths only as a whole name ({"from": ..., "to":
	// ...}): as the last word of a longer one (reply_to, valid_from) they
	// are rarely paths.
	onlyPathNames = []string{"from", "to"}

	pathWordsAnywhere = []string{"path", "paths", "file", "files", "filepath", "filename", "dir", "directory", "folder"}
	notPathLast       = []string{"id", "ids", "type", "types", "size", "sizes", "count", "format", "mode", "ext", "extension",
		"pattern", "patterns", "content", "contents", "data", "url", "urls", "hash", "sha", "length", "limit", "encoding"}
)

// isPathKey reports whether an argument named name holds paths: its last
// word is a path word (output_path, workDir, old_path, newPath), or its
// last word is "name" after one (file_name, dirName), or it is one
// lowercase word ending in one (inputfile), or it is from or to. This is
// the one place names are judged; values are also paths by their shape
// (hasPathShape), whatever their name.
func isPathKey(name string) bool {
	// file1, path_2, src0: a number at the end numbers the path.
	words := nameWords(strings.TrimRightFunc(name, func(r rune) bool { return unicode.IsDigit(r) || r == '_' || r == '-' }))
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	if contains(pathKeyWords, last) || (len(words) == 1 && contains(onlyPathNames, last)) {
		return true
	}
	// pathInProject, file_path_list: a path word anywhere, unless the last
	// word makes it something else (file_id, file_size, dir_mode).
	if !contains(notPathLast, last) {
		for _, w := range words[:len(words)-1] {
			if contains(pathWordsAnywhere, w) {
				return true
			}
		}
	}
	if (last == "name" || last == "names") && len(words) > 1 && contains(pathKeyWords, words[len(words)-2]) {
		return true
	}
	if len(words) == 1 && !contains(notPathNames, last) {
		for _, suf := range pathSuffixes {
			if strings.HasSuffix(last, suf) {
				return true
			}
		}
	}
	return false
}

// nameWords splits an argument name into lowercase words at _, -, . and
// camelCase boundaries.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	rs := []rune(name)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// inheritPath are keys inside a path argument's object that hold the path
// itself ({"files": [{"name": ...}]}, {"path": {"value": ...}}); other
// keys there (content, mode) do not.
var inheritPath = []string{"name", "names", "value", "values", "location", "uri", "base"}

// collectPaths finds the path strings in the arguments: values of declared
// or path-named keys (strings, arrays of them, at any depth), and any
// string or object key anywhere that is a path by its shape. Shadowed
// duplicate values are searched too. The top-level argument skip (quiver's
// own justification) is the model's words, not a path, unless declared.
// It stops after maxPathValues+1 values: the caller refuses past the cap.
func collectPaths(args map[string]any, shadows []shadow, declared []string, skip string) []rawPath {
	var out []rawPath
	isDeclared := func(k string) bool { return contains(declared, k) }
	for _, k := range pathyKeys(args, false, isDeclared) {
		if k.name == skip && skip != "" && !k.pathy {
			continue
		}
		if isPathShapedKey(k.name) {
			out = append(out, rawPath{arg: k.name, s: k.name})
		}
		walkPaths(k.name, k.name, args[k.name], k.pathy, 0, &out)
	}
	for _, s := range shadows {
		top := s.key
		if !s.top {
			top = "(nested)"
		} else if s.key == skip && skip != "" && !isDeclared(s.key) {
			continue
		}
		walkPaths(top, s.key, s.value, (s.top && isDeclared(s.key)) || isPathKey(s.key), 0, &out)
	}
	return out
}

type rawPath struct {
	arg string
	s   string
}

func walkPaths(top, key string, v any, pathy bool, depth int, out *[]rawPath) {
	if depth > maxArgDepth || len(*out) > maxPathValues {
		return
	}
	switch x := v.(type) {
	case string:
		if pathy || hasPathShape(x) || mentionsFileURI(x) {
			*out = append(*out, rawPath{arg: top, s: x})
		}
		if doc, ok := jsonDocument(x, pathy); ok {
			// A server that takes its operations as a JSON string
			// ({"ops": "[{\"target\": \"/outside/x\"}]"}) opens the
			// paths inside it: judged as one relative name they were
			// written outside (red team 5).
			walkPaths(top, key, doc, pathy, depth+1, out)
		}
	case []any:
		for _, e := range x {
			walkPaths(top, key, e, pathy, depth+1, out)
		}
	case map[string]any:
		for _, k := range pathyKeys(x, pathy, nil) {
			if (pathy && looksLikePath(k.name)) || isPathShapedKey(k.name) {
				// {"files": {"/etc/x": "content"}}: the key is the path.
				*out = append(*out, rawPath{arg: top, s: k.name})
			}
			walkPaths(top, k.name, x[k.name], k.pathy, depth+1, out)
		}
	}
}

type pathyKey struct {
	name  string
	pathy bool
}

// pathyKeys are an object's keys in order, each with whether its value
// holds paths: a path name (or one declared), or a key like "name" either
// inside a path argument (inPath) or beside a path in the same object
// ({"path": "sub", "name": "../x"}).
func pathyKeys(obj map[string]any, inPath bool, declared func(string) bool) []pathyKey {
	keys := make([]pathyKey, 0, len(obj))
	sibling := false
	for k := range obj {
		p := isPathKey(k) || (declared != nil && declared(k))
		sibling = sibling || p
		keys = append(keys, pathyKey{k, p})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].name < keys[j].name })
	for i, k := range keys {
		if !k.pathy && (inPath || sibling) && contains(inheritPath, strings.ToLower(k.name)) {
			keys[i].pathy = true
		}
	}
	return keys
}

// procfs reports whether p is inside /proc, where what a path names
// depends on the process that resolves it.
func procfs(p string) bool {
	return p == "/proc" || strings.HasPrefix(p, "/proc/")
}

// isPathShapedKey reports whether a map key anywhere is a path by its
// shape or a file: URI, which is checked whatever object it is in.
func isPathShapedKey(k string) bool {
	return hasPathShape(k) || mentionsFileURI(k)
}

// looksLikePath reports whether a map key inside a path argument reads as
// a path: it has a separator, starts with "~" or ".", or is a file: URI.
func looksLikePath(k string) bool {
	return strings.ContainsAny(k, "/\\") || strings.HasPrefix(k, "~") || strings.HasPrefix(k, ".") || isFileURI(k)
}

// IsPathArgName reports whether the fence reads an argument of this name
// as a path (a value shaped like a path is one whatever its name).
func IsPathArgName(name string) bool { return isPathKey(name) }

// jsonDocument decodes a string that is a whole JSON object or array, so
// that the paths inside it are judged one by one. A document that spans
// lines under a name that does not say path is content (a package.json
// being written), as any string that spans lines is (hasPathShape).
func jsonDocument(s string, pathy bool) (any, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || !(t[0] == '{' && t[len(t)-1] == '}' || t[0] == '[' && t[len(t)-1] == ']') {
		return nil, false
	}
	if !pathy && strings.ContainsAny(t, "\n\r") {
		return nil, false
	}
	// Numbers as written: 1e400 is a number to Node and Python (Infinity,
	// inf), and failed Go's float64 (red team 43).
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err == nil {
		if _, err := dec.Token(); err == io.EOF {
			return doc, true
		}
	}
	// Not JSON to Go, yet maybe to the server (NaN, Infinity, a trailing
	// comma): every string literal in it is judged, as the strings of a
	// decoded document are.
	if lits := jsonStrings(t); len(lits) > 0 {
		return lits, true
	}
	return nil, false
}

// jsonStrings are the string literals in t: double-quoted ones decoded as
// JSON decodes them (a literal that does not decode is taken as written),
// single-quoted ones as YAML, JSON5 and Python read them (a doubled or a
// backslashed quote inside is a quote), and unquoted flow scalars after ":", ",", "[" or "{"
// ({target: /x}), which YAML reads as strings (red team 2 J1).
func jsonStrings(t string) []any {
	var out []any
	bare := true // at the start of a scalar: after [ { , :
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(t) && t[j] != '"' {
				if t[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(t) {
				j = len(t) - 1
			}
			var s string
			if json.Unmarshal([]byte(t[i:j+1]), &s) != nil {
				s = t[i+1 : j]
			}
			out = append(out, s)
			i, bare = j, false
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(t); j++ {
				if t[j] == '\'' {
					if j+1 < len(t) && t[j+1] == '\'' { // YAML's ''
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				if t[j] == '\\' && j+1 < len(t) && t[j+1] == '\'' { // JSON5, Python
					j++
				}
				b.WriteByte(t[j])
			}
			out = append(out, b.String())
			i, bare = j, false
		case c == '[' || c == '{' || c == ',' || c == ':':
			bare = true
		case c == ']' || c == '}':
			bare = false
		case c == ' ' || c == '\t':
		case bare:
			// An unquoted scalar runs to a flow indicator or ": ".
			j := i
			for j < len(t) && !strings.ContainsRune(",[]{}", rune(t[j])) && !(t[j] == ':' && (j+1 == len(t) || t[j+1] == ' ')) {
				j++
			}
			if v := strings.TrimSpace(t[i:j]); v != "" {
				out = append(out, v)
			}
			i, bare = j-1, false
		}
	}
	return out
}
