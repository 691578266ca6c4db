package index

import "strings"

// A synonymGroup is a set of general words that tool users use for one thing.
// Folded groups are the same thing under another name (ticket = issue): every
// member becomes the first member's term, in the index and in queries.
// Related groups are near enough to help recall but not to tie ranking
// ("show" may mean list or get): a query term also looks for the other
// members, at a lower weight.
//
// Only general vocabulary belongs here — words any catalog of tools uses —
// never a product's wording or a phrase from an evaluation query.
type synonymGroup struct {
	fold  bool
	words []string // the first is canonical; two-word entries are phrases
}

var synonymGroups = []synonymGroup{
	// Same thing, other name.
	{true, []string{"issue", "ticket"}},
	{true, []string{"repository", "repo"}},
	{true, []string{"pullrequest", "pr", "pull request", "mr", "merge request"}},
	{true, []string{"kubernetes", "k8s", "kube"}},
	{true, []string{"database", "db"}},
	{true, []string{"message", "msg"}},
	{true, []string{"directory", "dir", "folder"}},
	{true, []string{"email", "mail", "e-mail"}},
	{true, []string{"screenshot", "screen shot", "screengrab"}},
	{true, []string{"delete", "remove", "rm", "del"}},
	{true, []string{"configuration", "config", "cfg"}},
	{true, []string{"environment", "env"}},
	{true, []string{"image", "img", "picture", "pic", "photo"}},
	{true, []string{"information", "info"}},
	{true, []string{"statistics", "stats"}},
	{true, []string{"parameter", "param", "params"}},
	{true, []string{"argument", "arg", "args"}},
	{true, []string{"variable", "var", "vars"}},
	{true, []string{"authentication", "auth"}},
	{true, []string{"documentation", "docs"}},
	{true, []string{"index", "indices", "indexes"}},
	{true, []string{"application", "app"}},
	{true, []string{"javascript", "js"}},
	{true, []string{"typescript", "ts"}},
	{true, []string{"credential", "creds"}},
	{true, []string{"organization", "org", "organisation"}},
	{true, []string{"sms", "text message"}},
	{true, []string{"url", "uri", "link"}},
	{true, []string{"todo", "to do", "todos"}},
	{true, []string{"search", "look up", "lookup"}},

	// Near enough to help recall.
	{false, []string{"list", "show", "get", "fetch", "retrieve", "view", "display", "ls"}},
	{false, []string{"create", "add", "new", "make", "insert"}},
	{false, []string{"delete", "erase", "destroy", "drop", "purge", "clear"}},
	{false, []string{"page", "url", "website", "site", "webpage", "web"}},
	{false, []string{"screenshot", "capture", "snapshot"}},
	{false, []string{"search", "find", "query", "locate", "grep"}},
	{false, []string{"update", "edit", "modify", "change", "patch", "set"}},
	{false, []string{"run", "execute", "exec", "invoke", "launch"}},
	{false, []string{"start", "begin", "launch", "open"}},
	{false, []string{"stop", "halt", "terminate", "kill", "end", "cancel"}},
	{false, []string{"write", "save", "store", "put"}},
	{false, []string{"read", "open", "cat", "load"}},
	{false, []string{"send", "post", "deliver"}},
	{false, []string{"move", "rename", "mv"}},
	{false, []string{"copy", "duplicate", "cp", "clone"}},
	{false, []string{"deploy", "release", "ship", "publish"}},
	{false, []string{"scrape", "crawl", "extract"}},
	{false, []string{"summary", "summarize", "overview"}},
	{false, []string{"error", "exception", "crash", "failure", "fail"}},
	{false, []string{"event", "meeting", "appointment"}},
	{false, []string{"reply", "respond", "answer"}},
	{false, []string{"restart", "reboot", "reload"}},
	{false, []string{"enable", "activate"}},
	{false, []string{"disable", "deactivate"}},
	{false, []string{"user", "member", "account"}},
	{false, []string{"customer", "client"}},
	{false, []string{"alert", "alarm", "monitor", "notification"}},
	{false, []string{"metric", "statistics", "usage"}},
	{false, []string{"document", "doc", "file"}},
	{false, []string{"comment", "note"}},
	{false, []string{"schedule", "cron", "calendar"}},
	{false, []string{"download", "fetch"}},
	{false, []string{"upload", "attach"}},
	{false, []string{"command", "shell", "terminal", "cli"}},
	{false, []string{"table", "collection"}},
	{false, []string{"record", "row", "document"}},
	{false, []string{"log", "trace"}},
	{false, []string{"invoice", "bill", "billing"}},
	{false, []string{"payment", "pay", "charge"}},
}

// vocabulary is the compiled form of synonymGroups, over stemmed terms.
type vocabulary struct {
	fold    map[string]string    // stem -> canonical term
	phrases map[[2]string]string // stems of a two-word phrase -> canonical term
	related map[string][]string  // term -> other members' terms
}

func buildVocabulary(groups []synonymGroup) vocabulary {
	v := vocabulary{
		fold:    map[string]string{},
		phrases: map[[2]string]string{},
		related: map[string][]string{},
	}
	for _, g := range groups {
		if !g.fold {
			continue
		}
		canon := stem(g.words[0])
		for _, w := range g.words {
			if a, b, ok := strings.Cut(w, " "); ok {
				v.phrases[[2]string{stem(a), stem(b)}] = canon
				continue
			}
			if s := stem(strings.ReplaceAll(w, "-", "")); s != canon {
				v.fold[s] = canon
			}
		}
	}
	// "e-mail" splits into "e" + "mail"; the single letter is dropped, and
	// "mail" folds. Related groups are stated over folded terms.
	folded := func(w string) string {
		s := stem(w)
		if c, ok := v.fold[s]; ok {
			return c
		}
		return s
	}
	for _, g := range groups {
		if g.fold {
			continue
		}
		terms := make([]string, 0, len(g.words))
		for _, w := range g.words {
			terms = append(terms, folded(w))
		}
		for _, t := range terms {
			for _, o := range terms {
				if o != t && !contains(v.related[t], o) {
					v.related[t] = append(v.related[t], o)
				}
			}
		}
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
