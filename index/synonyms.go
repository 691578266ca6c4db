package index

import "strings"

// A synonymGroup is a set of general words that tool users use for one thing.
// Folded groups are the same thing under another name (ticket = issue): every
// member becomes the first member's term, in the index and in queries.
// Related groups are near enough to help recall but not to tie ranking
// ("edit" may mean update or patch): a query term also looks for the other
// members, at a lower weight.
//
// Only general vocabulary belongs here — abbreviations and other names of
// the field, English word forms the stemmer misses — never a product's
// wording or a phrase from an evaluation query. Every group says where it
// came from. A group written from general knowledge stays only if dropping
// it costs the fresh query set something (TestEvalVariants with
// QUIVER_EVAL_VARIANTS=groups drops each in turn); the fresh set judges,
// nothing is tuned on it. Abbreviations stay without that test: they are
// how the field writes, and a query set of 80 lines cannot sample them all.
type synonymGroup struct {
	fold  bool
	words []string // the first is canonical; two-word entries are phrases
}

var synonymGroups = []synonymGroup{
	// Abbreviations and other names of the field, folded. Sources: common
	// usage in developer tooling (GitHub/GitLab, kubectl, Unix, file
	// extensions); none was added for a query.
	{true, []string{"issue", "ticket"}},                                          // issue trackers: Jira/GitHub/GitLab
	{true, []string{"repository", "repo"}},                                       // git hosting
	{true, []string{"pullrequest", "pr", "pull request", "mr", "merge request"}}, // GitHub PR = GitLab MR
	{true, []string{"kubernetes", "k8s", "kube"}},                                // numeronym, kubectl
	{true, []string{"database", "db"}},
	{true, []string{"message", "msg"}},
	{true, []string{"directory", "dir", "folder"}},    // Unix / desktop names
	{true, []string{"email", "mail", "e-mail"}},       // kept on the fresh set too
	{true, []string{"screenshot", "screen shot"}},     // spelling variant
	{true, []string{"delete", "remove", "rm", "del"}}, // Unix rm, DOS del
	{true, []string{"configuration", "config", "cfg"}},
	{true, []string{"environment", "env"}},
	{true, []string{"image", "img"}},
	{true, []string{"information", "info"}},
	{true, []string{"statistics", "stats"}},
	{true, []string{"parameter", "param", "params"}},
	{true, []string{"argument", "arg", "args"}},
	{true, []string{"variable", "var", "vars"}},
	{true, []string{"authentication", "auth"}},
	{true, []string{"documentation", "docs"}},
	{true, []string{"index", "indices", "indexes"}}, // irregular plural the stemmer misses
	{true, []string{"application", "app"}},
	{true, []string{"javascript", "js"}},
	{true, []string{"typescript", "ts"}},
	{true, []string{"credential", "creds"}},
	{true, []string{"organization", "org", "organisation"}}, // and British spelling
	{true, []string{"url", "uri"}},
	{true, []string{"postgres", "postgresql", "pg"}},
	{true, []string{"yaml", "yml"}}, // file extension

	// Related words, from general knowledge of software tools, that earn
	// their place on the fresh set (dropping each costs it Recall@5 or
	// Recall@1).
	{false, []string{"page", "url", "website", "site", "webpage", "web"}},
	{false, []string{"update", "edit", "modify", "change", "patch", "set"}},
	{false, []string{"schedule", "cron", "calendar"}},
}

// vocabulary is the compiled form of synonymGroups, over stemmed terms.
type vocabulary struct {
	fold    map[string]string    // stem -> canonical term
	phrases map[[2]string]string // stems of a two-word phrase -> canonical term
	firsts  map[string]struct{}  // first stems of the phrases
	related map[string][]string  // term -> other members' terms
}

func buildVocabulary(groups []synonymGroup) vocabulary {
	v := vocabulary{
		fold:    map[string]string{},
		phrases: map[[2]string]string{},
		firsts:  map[string]struct{}{},
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
				v.firsts[stem(a)] = struct{}{}
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
