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

func describeThings(q string) string {
	if !strings.ContainsAny(q, "/.@#+") {
		return q
	}
	for _, p := range thingPatterns {
		q = p.re.ReplaceAllString(q, p.words)
	}
	return q
}

// stripThings removes what describeThings would describe, keeping a file's
// extension: the words only describeThings adds are those of the kinds.
func stripThings(q string) string {
	if !strings.ContainsAny(q, "/.@#+") {
		return q
	}
	for _, p := range thingPatterns {
		q = p.re.ReplaceAllString(q, p.bare)
	}
	return q
}
