package skills

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kinds of document.
const (
	KindSkill     = "skill"
	KindReference = "reference"
)

// EmbeddedPrefix starts the path of every document shipped inside quiver.
const EmbeddedPrefix = "quiver://skills/"

//go:embed *.md
var embedded embed.FS

// A Doc is one skill or reference file.
type Doc struct {
	Name        string
	Kind        string
	Description string
	Keywords    []string
	Headings    []string
	// Path is what read_file takes: EmbeddedPrefix+file for shipped
	// documents, an absolute path for the others.
	Path string
	body []byte
}

// A Library is an immutable set of documents.
type Library struct {
	docs   []Doc
	byPath map[string]int
}

// maxDocBytes bounds a document quiver will load; larger ones are skipped
// with an error, so a stray big file cannot bloat the index.
const maxDocBytes = 1 << 20

// Load reads the embedded documents and every *.md file under dirs. A file
// that cannot be read or parsed is skipped and reported; the rest load.
func Load(dirs []string) (*Library, []error) {
	lib := &Library{byPath: map[string]int{}}
	var errs []error
	entries, _ := fs.ReadDir(embedded, ".")
	for _, e := range entries {
		b, err := fs.ReadFile(embedded, e.Name())
		if err == nil {
			err = lib.add(EmbeddedPrefix+e.Name(), b)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("skills dir %q: %w", dir, err))
			continue
		}
		err = filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, fmt.Errorf("skills dir: %w", err))
				return nil
			}
			if d.IsDir() || !strings.EqualFold(filepath.Ext(path), ".md") {
				return nil
			}
			info, err := d.Info()
			if err != nil || info.Size() > maxDocBytes {
				errs = append(errs, fmt.Errorf("skill %s: larger than %d bytes; skipped", path, maxDocBytes))
				return nil
			}
			b, err := os.ReadFile(path)
			if err == nil {
				err = lib.add(path, b)
			}
			if err != nil {
				errs = append(errs, err)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	sort.Slice(lib.docs, func(i, j int) bool { return lib.docs[i].Path < lib.docs[j].Path })
	for i, d := range lib.docs {
		lib.byPath[d.Path] = i
	}
	return lib, errs
}

// Docs lists every document, in a stable order.
func (l *Library) Docs() []Doc { return l.docs }

// Read returns the text of the document at path.
func (l *Library) Read(path string) ([]byte, bool) {
	i, ok := l.byPath[path]
	if !ok {
		return nil, false
	}
	return l.docs[i].body, true
}

type frontMatter struct {
	Name        string   `yaml:"name"`
	Title       string   `yaml:"title"`
	Description string   `yaml:"description"`
	Keywords    []string `yaml:"keywords"`
	Kind        string   `yaml:"kind"`
}

// ErrNoFrontMatter is returned for a markdown file without the block that
// names and describes it.
var ErrNoFrontMatter = errors.New("no front matter (a --- block with name and description)")

func (l *Library) add(path string, b []byte) error {
	d, err := Parse(path, b)
	if err != nil {
		return err
	}
	if _, dup := l.byPath[path]; dup {
		return nil
	}
	l.byPath[path] = len(l.docs)
	l.docs = append(l.docs, d)
	return nil
}

// Parse reads one document: its front matter and its headings.
func Parse(path string, b []byte) (Doc, error) {
	text := bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(text, []byte("---\n"))
	if !ok {
		return Doc{}, fmt.Errorf("skill %s: %w", path, ErrNoFrontMatter)
	}
	head, body, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return Doc{}, fmt.Errorf("skill %s: the front matter has no closing ---", path)
	}
	var fm frontMatter
	dec := yaml.NewDecoder(bytes.NewReader(head))
	dec.KnownFields(true)
	if err := dec.Decode(&fm); err != nil {
		return Doc{}, fmt.Errorf("skill %s: front matter: %w", path, err)
	}
	if fm.Name == "" || fm.Description == "" {
		return Doc{}, fmt.Errorf("skill %s: the front matter needs name and description", path)
	}
	switch fm.Kind {
	case "":
		fm.Kind = KindSkill
	case KindSkill, KindReference:
	default:
		return Doc{}, fmt.Errorf("skill %s: kind %q is not skill or reference", path, fm.Kind)
	}
	d := Doc{Name: fm.Name, Kind: fm.Kind, Description: fm.Description, Keywords: fm.Keywords, Path: path, body: b}
	if fm.Title != "" {
		d.Headings = append(d.Headings, fm.Title)
	}
	inCode := false
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode && strings.HasPrefix(line, "#") {
			if h := strings.TrimSpace(strings.TrimLeft(line, "#")); h != "" {
				d.Headings = append(d.Headings, h)
			}
		}
	}
	return d, nil
}
