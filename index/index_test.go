package index

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestAnalyzer(t *testing.T) {
	a := &analyzer{}
	cases := []struct {
		name, in string
		want     []string
	}{
		{"snake case and server prefix", "github__create_issue", []string{"github", "creat", "issu"}},
		{"camelCase and acronyms", "getHTTPResponseV2", []string{"get", "http", "respons"}},
		{"dots and dashes", "slack.postMessage list-pull-requests", []string{"slack", "post", "messag", "list", "pullrequest"}},
		{"synonyms fold", "open a ticket in the repo", []string{"open", "issu", "repositori"}},
		{"phrase synonym", "merge requests", []string{"pullrequest"}},
		{"short mixed words stay whole", "k8s pod logs", []string{"kubernet", "pod", "log"}},
		{"numbers and single letters dropped", "TwilioApiV2010--CreateMessage", []string{"twilio", "api", "creat", "messag"}},
		{"stop and filler words dropped", "please show me the folder", []string{"show", "directori"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := a.terms(c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("terms(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestDescribeThings(t *testing.T) {
	cases := map[string]string{
		"tail /var/log/app.log":         "tail file path ",
		"mail jane@acme.com the report": "mail  email address  the report",
		"what changed on example.com":   "what changed on  url ",
		"post to #general":              "post to channel ",
		"open notes.txt":                "open  file txt ",
	}
	for in, want := range cases {
		if got := describeThings(in); got != want {
			t.Errorf("describeThings(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParamsFromSchema(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{
		"repo":{"type":"string","description":"Repository name"},
		"options":{"type":"object","properties":{"depth":{"description":"How deep"}}},
		"files":{"type":"array","items":{"type":"object","properties":{"path":{}}}}}}`)
	want := []Param{
		{Name: "files"}, {Name: "files.path"},
		{Name: "options"}, {Name: "options.depth", Description: "How deep"},
		{Name: "repo", Description: "Repository name"},
	}
	if got := ParamsFromSchema(raw); !reflect.DeepEqual(got, want) {
		t.Errorf("ParamsFromSchema = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "{", "[]", "null", `{"properties":7}`} {
		if got := ParamsFromSchema(json.RawMessage(bad)); got != nil {
			t.Errorf("ParamsFromSchema(%q) = %+v, want nil", bad, got)
		}
	}
}

// smallCatalog is a hand-written catalog covering every kind.
func smallCatalog() []Entry {
	return []Entry{
		{Name: "search_tools", Kind: KindCore, Description: "Search the tools, skills and references quiver knows."},
		{Name: "read_file", Kind: KindCore, Description: "Read a file inside the allowed roots.", Params: []Param{{Name: "path"}}},
		{Name: "github__create_issue", Kind: KindMCP, Server: "github", Keywords: []string{"github"}, Description: "Create a new issue in a GitHub repository"},
		{Name: "github__list_issues", Kind: KindMCP, Server: "github", Keywords: []string{"github"}, Description: "List issues in a GitHub repository with filtering options", ReadOnly: true},
		{Name: "gitlab__create_issue", Kind: KindMCP, Server: "gitlab", Keywords: []string{"gitlab"}, Description: "Create a new issue in a GitLab project"},
		{Name: "puppeteer__puppeteer_screenshot", Kind: KindMCP, Server: "puppeteer", Keywords: []string{"puppeteer"}, Description: "Take a screenshot of the current page or a specific element"},
		{Name: "slack__slack_post_message", Kind: KindMCP, Server: "slack", Keywords: []string{"slack"}, Description: "Post a new message to a Slack channel"},
		{Name: "release-notes", Kind: KindSkill, Title: "Writing release notes", Description: "How to write release notes for a pipeline release.", Keywords: []string{"changelog"}, Headings: []string{"Structure", "Tone"}, Path: "skills/release-notes/SKILL.md"},
		{Name: "nf-core-lint", Kind: KindReference, Title: "nf-core lint reference", Description: "Every lint test and how to fix it.", Headings: []string{"files_exist", "schema_lint"}, Path: "skills/lint/REFERENCE.md"},
	}
}

func buildSmall(t *testing.T) *Index {
	t.Helper()
	ix, err := Build(smallCatalog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Error(err)
		}
	})
	return ix
}

func names(res Result) []string {
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.Entry.Name
	}
	return out
}

func TestSearch(t *testing.T) {
	ix := buildSmall(t)
	ctx := context.Background()
	cases := []struct {
		name  string
		q     Query
		first string
	}{
		{"synonym", Query{Text: "open a ticket"}, "github__create_issue"},
		{"named service wins", Query{Text: "new issue in gitlab"}, "gitlab__create_issue"},
		{"typo", Query{Text: "screenshto of the page"}, "puppeteer__puppeteer_screenshot"},
		{"kinds filter", Query{Text: "release notes", Kinds: []Kind{KindSkill}}, "release-notes"},
		{"headings", Query{Text: "schema lint", Kinds: []Kind{KindReference}}, "nf-core-lint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := ix.Search(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) == 0 || res.Hits[0].Entry.Name != c.first {
				t.Fatalf("Search(%q) = %v, want %s first", c.q.Text, names(res), c.first)
			}
			if res.Weak {
				t.Errorf("Search(%q) is weak, want confident", c.q.Text)
			}
		})
	}
}

func TestSearchKinds(t *testing.T) {
	ix := buildSmall(t)
	res, err := ix.Search(context.Background(), Query{Text: "create issue read file release", Kinds: []Kind{KindCore, KindMCP}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Fatal("no hits")
	}
	for _, h := range res.Hits {
		if h.Entry.Kind != KindCore && h.Entry.Kind != KindMCP {
			t.Errorf("hit %s of kind %s, want core or mcp only", h.Entry.Name, h.Entry.Kind)
		}
	}
}

func TestSearchSkillEntry(t *testing.T) {
	ix := buildSmall(t)
	res, err := ix.Search(context.Background(), Query{Text: "changelog tone"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Fatal("no hits")
	}
	h := res.Hits[0].Entry
	if h.Name != "release-notes" || h.Kind != KindSkill || h.Path != "skills/release-notes/SKILL.md" {
		t.Errorf("first hit = %+v, want the release-notes skill with its path", h)
	}
}

func TestSearchLimit(t *testing.T) {
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, c := range []struct{ limit, want int }{{0, 5}, {-1, 5}, {3, 3}, {50, 10}} {
		res, err := ix.Search(context.Background(), Query{Text: "list files", Limit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != c.want {
			t.Errorf("Limit %d gave %d hits, want %d", c.limit, len(res.Hits), c.want)
		}
	}
}

func TestWeak(t *testing.T) {
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	cases := []struct {
		text string
		weak bool
	}{
		{"", true},
		{"the of and", true},
		{"zzqx vbnmw", true},
		{"water the garden plants on the balcony", true},
		{"create a github issue", false},
		{"list kubernetes pods", false},
	}
	for _, c := range cases {
		res, err := ix.Search(context.Background(), Query{Text: c.text})
		if err != nil {
			t.Fatal(err)
		}
		if res.Weak != c.weak {
			t.Errorf("Search(%q).Weak = %v, want %v (hits %v)", c.text, res.Weak, c.weak, names(res))
		}
	}
}

func TestClosest(t *testing.T) {
	ix := buildSmall(t)
	cases := []struct {
		text  string
		kinds []Kind
		first string
	}{
		{"github__create_isue", nil, "github__create_issue"},
		{"create_issue", nil, "github__create_issue"},
		{"issue_create", []Kind{KindMCP}, "github__create_issue"},
		{"slack_post_msg", nil, "slack__slack_post_message"},
		{"read_fil", []Kind{KindCore}, "read_file"},
		{"release_notes", []Kind{KindSkill}, "release-notes"},
	}
	for _, c := range cases {
		got := ix.Closest(c.text, 3, c.kinds...)
		if len(got) == 0 || got[0] != c.first {
			t.Errorf("Closest(%q) = %v, want %s first", c.text, got, c.first)
		}
		if len(got) > 3 {
			t.Errorf("Closest(%q) returned %d names, want at most 3", c.text, len(got))
		}
	}
	if got := ix.Closest("x", 0); got != nil {
		t.Errorf("Closest with n=0 = %v, want nil", got)
	}
	for _, n := range ix.Closest("create", 20, KindMCP) {
		for _, e := range smallCatalog() {
			if e.Name == n && e.Kind != KindMCP {
				t.Errorf("Closest kinds filter let %s (%s) through", n, e.Kind)
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build([]Entry{{Name: "a"}, {Name: "a"}}); err == nil {
		t.Error("duplicate names: no error")
	}
	if _, err := Build([]Entry{{Name: ""}}); err == nil {
		t.Error("empty name: no error")
	}
	ix, err := Build(nil)
	if err != nil {
		t.Fatalf("empty catalog: %v", err)
	}
	defer ix.Close()
	if res, err := ix.Search(context.Background(), Query{Text: "anything"}); err != nil || len(res.Hits) != 0 || !res.Weak {
		t.Errorf("empty index search = %+v, %v; want no hits, weak", res, err)
	}
	if ix.Len() != 0 || ix.Closest("x", 3) != nil {
		t.Error("empty index: Len or Closest not empty")
	}
}

// TestConcurrentSearchAndSwap searches from several goroutines while new
// indexes are built and swapped in and old ones closed, as proxy does on a
// catalog change. Run with -race.
func TestConcurrentSearchAndSwap(t *testing.T) {
	entries := testCatalog(t)
	first, err := Build(entries)
	if err != nil {
		t.Fatal(err)
	}
	// An index is closed only after every search that loaded it is done:
	// the caller's duty, done here with a reference count per index.
	type handle struct {
		ix   *Index
		refs sync.WaitGroup
	}
	var cur atomic.Pointer[handle]
	var mu sync.Mutex // orders acquire against swap
	cur.Store(&handle{ix: first})
	acquire := func() *handle {
		mu.Lock()
		defer mu.Unlock()
		h := cur.Load()
		h.refs.Add(1)
		return h
	}

	queries := []string{"create a github issue", "k8s pod logs", "screenshot the page", "send slack message"}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				h := acquire()
				res, err := h.ix.Search(context.Background(), Query{Text: queries[(g+i)%len(queries)]})
				if err == nil && len(res.Hits) == 0 {
					t.Errorf("no hits for %q", queries[(g+i)%len(queries)])
				}
				if err != nil {
					t.Error(err)
				}
				_ = h.ix.Closest("create_isue", 3)
				h.refs.Done()
			}
		}(g)
	}
	for round := 0; round < 2; round++ {
		next, err := Build(entries[round*100:])
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		old := cur.Swap(&handle{ix: next})
		mu.Unlock()
		old.refs.Wait()
		if err := old.ix.Close(); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := cur.Load().ix.Close(); err != nil {
		t.Error(err)
	}
}

// TestSpeller: a word one edit from catalog words is corrected to the most
// used of them; two edits, or a short word, are left alone; the
// first-letter rule, when on, refuses a correction that changes the first
// letter. The words are made up for the test, not taken from a query set.
func TestSpeller(t *testing.T) {
	freq := map[string]int{"socket": 9, "bucket": 9, "render": 3, "tender": 1, "template": 2, "pod": 5}
	for _, c := range []struct {
		rules   spellRules
		w, want string
	}{
		{spellRules{}, "rendre", "render"},    // swap
		{spellRules{}, "templte", "template"}, // deletion
		{spellRules{}, "buckets", "bucket"},   // insertion
		{spellRules{}, "pocket", "socket"},    // substitution (bucket is two edits away)
		{spellRules{}, "sprocket", ""},        // two edits
		{spellRules{}, "pdo", ""},             // under minTypoLen
		{spellRules{}, "lender", "render"},    // render is used more than tender
		{spellRules{keepFirstLetter: true}, "pocket", ""},
		{spellRules{keepFirstLetter: true}, "tendre", "tender"},
		{spellRules{minLen: 3}, "pdo", "pod"},
	} {
		if got := newSpeller(freq, c.rules).correct(c.w); got != c.want {
			t.Errorf("%+v: correct(%q) = %q, want %q", c.rules, c.w, got, c.want)
		}
	}
}

// TestBuildChunksAgree: a catalog built in chunks side by side has the same
// statistics and answers the same as one built in one piece.
func TestBuildChunksAgree(t *testing.T) {
	entries := syntheticCatalog(t, 4500)
	one, err := buildChunks(entries, defaultOptions(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	for _, chunks := range []int{2, 3} {
		ix, err := buildChunks(entries, defaultOptions(), chunks)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		for _, c := range []struct {
			name      string
			got, want any
		}{
			{"df", ix.df, one.df},
			{"nameDF", ix.nameDF, one.nameDF},
			{"serverDF", ix.serverDF, one.serverDF},
			{"terms", ix.terms, one.terms},
			{"heads", ix.heads, one.heads},
			{"speller", ix.speller, one.speller},
			{"names", ix.names, one.names},
			{"servers", ix.servers, one.servers},
			{"byName", ix.byName, one.byName},
		} {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%d chunks: %s differs from one chunk's", chunks, c.name)
			}
		}
		ctx := context.Background()
		for _, q := range testQueries(t) {
			want, err := one.Search(ctx, Query{Text: q.Query, Limit: maxLimit})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ix.Search(ctx, Query{Text: q.Query, Limit: maxLimit})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%d chunks: %q: got %v, want %v", chunks, q.Query, names(got), names(want))
			}
		}
	}
}

// TestSearchExactName: a tool's exact name, whole or without its server
// prefix, is that tool at rank 1, whatever its description says.
func TestSearchExactName(t *testing.T) {
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	for _, c := range []struct {
		text  string
		first []string
	}{
		{"github__merge_pull_request", []string{"github__merge_pull_request"}},
		{"  GitHub__Merge_Pull_Request ", []string{"github__merge_pull_request"}},
		{"merge_pull_request", []string{"github__merge_pull_request"}},
		{"add_issue_comment", []string{"github__add_issue_comment"}},
	} {
		res, err := ix.Search(ctx, Query{Text: c.text})
		if err != nil {
			t.Fatal(err)
		}
		got := names(res)
		if len(got) < len(c.first) || !reflect.DeepEqual(got[:len(c.first)], c.first) || res.Weak {
			t.Errorf("Search(%q) = %v weak=%v, want %v first, confident", c.text, got, res.Weak, c.first)
		}
	}
	// A tool part two servers share is both, in catalog order.
	res, err := ix.Search(ctx, Query{Text: "read_file"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); len(got) < 2 || got[0] != "filesystem__read_file" || got[1] != "desktop-commander__read_file" {
		t.Errorf("Search(read_file) = %v, want filesystem's then desktop-commander's read_file first", got)
	}
	res, err = ix.Search(ctx, Query{Text: "read_file", Server: "desktop-commander"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); len(got) == 0 || got[0] != "desktop-commander__read_file" {
		t.Errorf("Search(read_file, server desktop-commander) = %v", got)
	}
}

// TestSearchServerFilter: Query.Server keeps one server's entries; an
// unknown server is said so.
func TestSearchServerFilter(t *testing.T) {
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	res, err := ix.Search(ctx, Query{Text: "create an issue", Server: "gitlab", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Entry.Name != "gitlab__create_issue" {
		t.Errorf("gitlab only: %v", names(res))
	}
	for _, h := range res.Hits {
		if h.Entry.Server != "gitlab" {
			t.Errorf("server filter let %s through", h.Entry.Name)
		}
	}
	for _, s := range res.Servers {
		if s.Name != "gitlab" {
			t.Errorf("server filter listed server %s", s.Name)
		}
	}
	res, err = ix.Search(ctx, Query{Text: "create an issue", Server: "nosuch"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NoServer || len(res.Hits) != 0 {
		t.Errorf("unknown server: %+v", res)
	}
}

// TestSearchNear: past its hits an answer offers the likeliest other
// names, grouped by server, within the byte budget: the right tool a model
// would take for a squash is among them, and so is the best ranked tool
// past the hits.
func TestSearchNear(t *testing.T) {
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	res, err := ix.Search(context.Background(), Query{Text: "squash a pull request on github"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) == 0 || res.Servers[0].Name != "github" {
		t.Fatalf("servers = %+v, want github first", res.Servers)
	}
	hit := map[string]bool{}
	for _, h := range res.Hits {
		hit[h.Entry.Name] = true
	}
	var offered []string
	size := 0
	for _, s := range res.Servers {
		size += len(s.Name) + 2
		for _, n := range s.More {
			if hit[n] {
				t.Errorf("%s is both a hit and offered", n)
			}
			if !strings.HasPrefix(n, s.Name+"__") {
				t.Errorf("%s offered under %s", n, s.Name)
			}
			size += len(n) - len(s.Name) - 2 + 2
			offered = append(offered, n)
		}
	}
	if size > defaultOptions().nearBytes {
		t.Errorf("%d bytes of names offered, over %d", size, defaultOptions().nearBytes)
	}
	if !slices.Contains(append(names(res), offered...), "github__merge_pull_request") {
		t.Errorf("merge_pull_request is neither hit nor offered: %v", offered)
	}
	more, err := ix.Search(context.Background(), Query{Text: "squash a pull request on github", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if sixth := names(more)[len(res.Hits)]; !slices.Contains(offered, sixth) {
		t.Errorf("%s, ranked just past the hits, is not offered: %v", sixth, offered)
	}
}

// TestSearchListsAServer: a search with a server and no words gives that
// server's every tool, and no hits.
func TestSearchListsAServer(t *testing.T) {
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	res, err := ix.Search(context.Background(), Query{Server: "github"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 0 || len(res.Servers) != 1 || res.Servers[0].Name != "github" || len(res.Servers[0].More) != 26 {
		t.Fatalf("listing github: %+v", res)
	}
	if res, _ := ix.Search(context.Background(), Query{Server: "nosuch"}); !res.NoServer {
		t.Errorf("listing an unknown server: %+v", res)
	}
}

// TestServerDocumentsUseServerText: what a server says about itself (its
// instructions) ranks the server, though none of its tools says it.
func TestServerDocumentsUseServerText(t *testing.T) {
	entries := []Entry{
		{Name: "a__run", Kind: KindMCP, Server: "a", Description: "Run a thing.", ServerInstructions: "Use this server for invoices and ledgers."},
		{Name: "a__list", Kind: KindMCP, Server: "a", Description: "List things.", ServerInstructions: "Use this server for invoices and ledgers."},
		{Name: "b__run", Kind: KindMCP, Server: "b", Description: "Run a thing.", ServerTitle: "Weather"},
		{Name: "b__list", Kind: KindMCP, Server: "b", Description: "List things.", ServerTitle: "Weather"},
	}
	ix, err := Build(entries)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for q, want := range map[string]string{"run the ledgers": "a", "list the weather": "b"} {
		if got := rankedServers(ix, q, nil); len(got) == 0 || got[0] != want {
			t.Errorf("servers for %q: %v, want %s first", q, got, want)
		}
	}
}

// TestSearchServersKinds: a search for skills names no server whose
// entries are all tools.
func TestSearchServersKinds(t *testing.T) {
	ix := buildSmall(t)
	res, err := ix.Search(context.Background(), Query{Text: "github issue release notes", Kinds: []Kind{KindSkill}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 0 {
		t.Errorf("servers %+v for a skill search", res.Servers)
	}
	if got := rankedServers(ix, "github issue release notes", []Kind{KindSkill}); len(got) != 0 {
		t.Errorf("servers %v ranked for a skill search", got)
	}
	if got := rankedServers(ix, "github issue", nil); len(got) == 0 || got[0] != "github" {
		t.Errorf("servers %v, want github first", got)
	}
}

// rankedServers are the servers ranked for q by their documents alone.
func rankedServers(ix *Index, q string, kinds []Kind) []string {
	docs, top := ix.serverScores(ix.queryTerms(q))
	var out []string
	for _, r := range ix.rankServers(docs, top, nil, kinds, -1) {
		out = append(out, ix.servers.names[r.sid])
	}
	return out
}

// TestSearchNearNamesRankedPastHits: tools ranked just past the hits are
// offered, whatever their server.
func TestSearchNearNamesRankedPastHits(t *testing.T) {
	var entries []Entry
	for i := range 12 {
		srv := fmt.Sprintf("s%02d", i)
		entries = append(entries, Entry{Name: srv + "__frobnicate_widget", Kind: KindMCP, Server: srv,
			Description: fmt.Sprintf("Frobnicate a widget%s.", strings.Repeat(" and more", i))})
	}
	ix, err := Build(entries)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	res, err := ix.Search(context.Background(), Query{Text: "frobnicate widget"})
	if err != nil {
		t.Fatal(err)
	}
	named := names(res)
	for _, s := range res.Servers {
		named = append(named, s.More...)
	}
	missing := 0
	for _, e := range entries {
		if !slices.Contains(named, e.Name) {
			missing++
		}
	}
	// 5 hits, and the 7 others offered: every one of the 12 is named.
	if missing != 0 {
		t.Errorf("hits %v, offered %v: %d of %d tools named nowhere", names(res), res.Servers, missing, len(entries))
	}
}

// TestListedNamesBindByExactName: a name an answer offers past its hits
// is not a hit (not bound), and searching it alone makes it
// the first hit, confidently: the way the model binds a listed tool.
func TestListedNamesBindByExactName(t *testing.T) {
	ix, err := Build(testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	qs, err := readQueries(devFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	checked := map[string]bool{}
	for _, q := range qs {
		res, err := ix.Search(ctx, Query{Text: q.Query})
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, s := range res.Servers {
			listed = append(listed, s.More...)
		}
		for _, n := range listed {
			if slices.Contains(names(res), n) {
				t.Errorf("%q: %s is listed and a hit", q.Query, n)
			}
			if checked[n] {
				continue
			}
			checked[n] = true
			got, err := ix.Search(ctx, Query{Text: n})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Hits) == 0 || got.Hits[0].Entry.Name != n || got.Weak {
				t.Errorf("Search(%q) = %v weak=%v, want it first, confident", n, names(got), got.Weak)
			}
		}
	}
	if len(checked) < 500 {
		t.Errorf("only %d names listed over the dev queries", len(checked))
	}
}
