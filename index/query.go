package index

import (
	"regexp"
	"strings"
)

// Requests carry concrete things — a path, a URL, an address, a channel —
// whose letters mean nothing to a catalog ("/var/log/app/server.log" is not
// about apps or servers) but whose kind says a lot: a path wants a file tool,
// "#ops" a chat channel. describeThings replaces each such thing in a query
// by the words for its kind. Only queries go through it: catalog text names
// kinds of things, not instances.
type thingPattern struct {
	re    *regexp.Regexp
	words string
	bare  string // the replacement without the kind's words
}

// The order matters: URLs and emails contain what later patterns match.
var thingPatterns = []thingPattern{
	{regexp.MustCompile(`\b(?:https?://|www\.)\S+`), " url ", " "},
	{regexp.MustCompile(`\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b`), " email address ", " "},
	{regexp.MustCompile(`\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|dev|ai|app|co|gov|edu)\b(?:/\S*)?`), " url ", " "},
	{regexp.MustCompile(`(?:^|\s)(?:~|\.{1,2})?/[\w.~-]+(?:/[\w.~-]*)+`), " file path ", " "},
	{regexp.MustCompile(`(?:^|\s)#[\w-]+`), " channel ", " "},
	{regexp.MustCompile(`(?:^|\s)\+\d[\d -]{6,}\d`), " phone number ", " "},
	{regexp.MustCompile(`\b[\w-]+\.([a-z][a-z0-9]{1,4})\b`), " file $1 ", " $1 "},
}

// describeThings replaces each thing in q by the words for its kind.
func describeThings(q string) string { return replaceThings(q, false) }

// stripThings removes what describeThings would describe, keeping a file's
// extension: the words only describeThings adds are those of the kinds.
func stripThings(q string) string { return replaceThings(q, true) }

func replaceThings(q string, bare bool) string {
	if !strings.ContainsAny(q, "/.@#+") {
		return q
	}
	for _, p := range thingPatterns {
		with := p.words
		if bare {
			with = p.bare
		}
		q = p.re.ReplaceAllString(q, with)
	}
	return q
}
