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
	{true, []string{"markdown", "md"}},
	{true, []string{"postgres", "postgresql", "pg"}},
	{true, []string{"yaml", "yml"}},

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

	// How people ask for tool actions and the things tools act on, from
	// general knowledge of software tools (wider than the above).
	{false, []string{"generate", "create", "produce", "render", "draw", "compose"}},
	{false, []string{"screenshot", "image", "picture"}},
	{false, []string{"download", "grab", "pull", "save"}},
	{false, []string{"describe", "detail", "inspect", "status", "information"}},
	{false, []string{"console", "log", "output", "stdout", "stderr", "warning"}},
	{false, []string{"tab", "page", "window"}},
	{false, []string{"news", "headline", "article", "latest"}},
	{false, []string{"watch", "monitor", "track", "observe"}},
	{false, []string{"diff", "change", "delta", "patch"}},
	{false, []string{"blame", "annotate", "author", "authorship"}},
	{false, []string{"invite", "invitation", "rsvp", "event", "attendee"}},
	{false, []string{"respond", "accept", "decline", "rsvp"}},
	{false, []string{"maintenance", "downtime", "outage", "offline"}},
	{false, []string{"drain", "cordon", "evict", "uncordon"}},
	{false, []string{"scale", "replica", "resize", "autoscale", "instance"}},
	{false, []string{"secret", "token", "key", "password", "credential"}},
	{false, []string{"cost", "price", "pricing", "spend", "billing", "quota", "credit", "usage"}},
	{false, []string{"money", "balance", "fund", "payout", "cash", "amount"}},
	{false, []string{"slow", "latency", "performance", "perf", "bottleneck", "duration"}},
	{false, []string{"mute", "silence", "snooze", "suppress", "suppression"}},
	{false, []string{"bounce", "suppression", "unsubscribe", "blocklist", "complaint"}},
	{false, []string{"emoji", "reaction", "react"}},
	{false, []string{"chat", "channel", "conversation", "thread"}},
	{false, []string{"history", "recent", "past", "previous", "timeline"}},
	{false, []string{"sms", "text", "message"}},
	{false, []string{"documentation", "reference", "manual", "guide", "explain"}},
	{false, []string{"spreadsheet", "sheet", "excel", "xlsx", "csv", "workbook"}},
	{false, []string{"pdf", "document"}},
	{false, []string{"attachment", "attach", "attached"}},
	{false, []string{"embedding", "vector", "embed", "semantic"}},
	{false, []string{"vm", "instance", "droplet", "machine", "server", "host"}},
	{false, []string{"dns", "domain", "zone", "record"}},
	{false, []string{"bucket", "storage", "blob", "object"}},
	{false, []string{"cache", "kv", "key"}},
	{false, []string{"permission", "role", "access", "acl", "grant", "policy"}},
	{false, []string{"flag", "toggle", "feature", "switch"}},
	{false, []string{"rollout", "release", "deploy", "launch"}},
	{false, []string{"test", "check", "validate", "verify", "lint"}},
	{false, []string{"fix", "repair", "diagnose", "troubleshoot", "debug"}},
	{false, []string{"report", "research", "analysis", "investigate"}},
	{false, []string{"citation", "source", "reference", "cite"}},
	{false, []string{"nearby", "near", "around", "proximity", "within"}},
	{false, []string{"restaurant", "place", "poi", "venue", "business", "shop"}},
	{false, []string{"coordinate", "latitude", "longitude", "location", "geocode", "address"}},
	{false, []string{"direction", "route", "navigate", "travel", "distance"}},
	{false, []string{"upgrade", "migrate", "migration"}},
	{false, []string{"ddl", "schema", "migration", "alter", "column"}},
	{false, []string{"notify", "notification", "remind", "reminder", "ping"}},
	{false, []string{"contact", "subscriber", "audience", "recipient", "lead"}},
	{false, []string{"refund", "chargeback", "dispute"}},
	{false, []string{"subscription", "plan", "recurring"}},
	{false, []string{"order", "purchase", "checkout", "cart"}},
	{false, []string{"inventory", "stock", "product", "catalog"}},
	{false, []string{"visitor", "traffic", "analytics", "pageview"}},
	{false, []string{"cpu", "load", "utilization"}},
	{false, []string{"disk", "storage", "volume", "space"}},
	{false, []string{"archive", "zip", "compress"}},
	{false, []string{"merge", "combine", "join"}},
	{false, []string{"translate", "translation", "language"}},
	{false, []string{"weather", "forecast"}},
	{false, []string{"repository", "project", "codebase"}},
	{false, []string{"branch", "checkout", "switch"}},
	{false, []string{"commit", "stage", "staged"}},
	{false, []string{"sql", "query", "statement"}},
	{false, []string{"task", "todo", "job"}},
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
