package index

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blugelabs/bluge/analysis"
	"github.com/blugelabs/bluge/analysis/lang/en"
)

// The analyzer turns names and prose into index terms:
//
//	split on anything not a letter or digit (so `_`, `-`, `.`, `__`, `/`),
//	then on camelCase and letter/digit boundaries; lowercase; drop single
//	letters, bare numbers and English stop words; stem (snowball English);
//	fold synonyms onto one canonical term.
//
// The same analyzer runs at Build and at Search, so "ticket" in a query and
// "issue" in a description meet on the same term.

// token is one analyzed word: the lowercased surface word (what typo
// correction compares) and the index term it became.
type token struct {
	word string
	term string
	wi   *wordInfo // the analyzer's cached word, nil without a cache or for a phrase
}

// maxWordLen drops ids, hashes and base64 that would only bloat the index.
const maxWordLen = 32

// splitWords splits text into lowercase words: runs of letters and digits,
// cut again at camelCase humps and letter/digit boundaries. Short mixed runs
// such as "k8s", "s3" or "ec2" stay whole: they are names, not two words.
func splitWords(text string, out []string) []string {
	start := -1
	for i, r := range text {
		if r < utf8.RuneSelf && (isLowerASCII(byte(r)) || isUpperASCII(byte(r)) || isDigitASCII(byte(r))) ||
			r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = splitRun(text[start:i], out)
			start = -1
		}
	}
	if start >= 0 {
		out = splitRun(text[start:], out)
	}
	return out
}

func splitRun(run string, out []string) []string {
	if len(run) <= 4 && hasLetterAndDigit(run) {
		return append(out, strings.ToLower(run))
	}
	if !isASCII(run) {
		return splitRunes(run, out)
	}
	// ASCII fast path: most catalog text is ASCII, and this loop runs over
	// every word of every description at Build.
	from := 0
	for i := 1; i < len(run); i++ {
		prev, cur := run[i-1], run[i]
		cut := false
		switch {
		case isLowerASCII(prev) && isUpperASCII(cur):
			cut = true
		case isUpperASCII(prev) && isUpperASCII(cur) && i+1 < len(run) && isLowerASCII(run[i+1]):
			cut = true
		case isDigitASCII(prev) != isDigitASCII(cur):
			cut = true
		}
		if cut {
			out = append(out, lowerASCII(run[from:i]))
			from = i
		}
	}
	return append(out, lowerASCII(run[from:]))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isLowerASCII(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpperASCII(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigitASCII(c byte) bool { return '0' <= c && c <= '9' }

// lowerASCII lowercases s, without allocating when it is lowercase already.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if isUpperASCII(s[i]) {
			return strings.ToLower(s)
		}
	}
	return s
}

func splitRunes(run string, out []string) []string {
	rs := []rune(run)
	from := 0
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		cut := false
		switch {
		case unicode.IsLower(prev) && unicode.IsUpper(cur):
			cut = true // getIssue -> get|Issue
		case unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			cut = true // HTTPResponse -> HTTP|Response
		case unicode.IsDigit(prev) != unicode.IsDigit(cur):
			cut = true // V2010 -> V|2010
		}
		if cut {
			out = append(out, strings.ToLower(string(rs[from:i])))
			from = i
		}
	}
	return append(out, strings.ToLower(string(rs[from:])))
}

func hasLetterAndDigit(s string) bool {
	var l, d bool
	for _, r := range s {
		l = l || unicode.IsLetter(r)
		d = d || unicode.IsDigit(r)
	}
	return l && d
}

// keepWord reports whether a split word can carry meaning on its own.
func keepWord(w string) bool {
	n := utf8.RuneCountInString(w)
	if n < 2 || len(w) > maxWordLen {
		return false
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return true
		}
	}
	return false // bare numbers ("50 lines", "v2010") match noise
}

// stem runs bluge's snowball English stemmer on one word.
func stem(w string) string {
	ts := analysis.TokenStream{&analysis.Token{Term: []byte(w)}}
	return string(snowball.Filter(ts)[0].Term)
}

// Package-level analysis tables: built once at init, never written again.
var (
	snowball  = en.StemmerFilter()
	stopWords = buildStopWords()
	vocab     = buildVocabulary(synonymGroups)
)

// fillerWords are words of requests, not of tools: how people ask, not what
// they ask for. English stop words cover the rest.
var fillerWords = []string{
	"please", "want", "need", "like", "let", "can", "could", "would", "help",
	"also", "just", "some", "thing", "things", "something", "way", "ok",
	"there", "via", "using",
}

func buildStopWords() map[string]bool {
	m := map[string]bool{}
	for w := range en.StopWords() {
		m[w] = true
	}
	for _, w := range fillerWords {
		m[w] = true
	}
	return m
}

// analyzer turns text into tokens. It holds only immutable tables and an
// optional word cache owned by one goroutine (Build's).
type analyzer struct {
	words map[string]*wordInfo // nil: no cache (Search runs concurrently)
	vocab *vocabulary          // nil: the default vocabulary
}

// wordInfo is what the analyzer makes of one split word, whatever its
// neighbours: a catalog says the same words over and over, and Build looks
// each up once instead of stemming, folding and checking it again.
type wordInfo struct {
	stem  string // the snowball stem
	term  string // the index term: the stem, synonyms folded; "" if dropped
	first bool   // the stem starts a two-word phrase of the vocabulary

	// Build's counts for the word, kept here so that a token costs one
	// map lookup (analyzeEntries).
	count wordAcc
	acc   *termAcc // its term's accumulator
}

func (a *analyzer) voc() *vocabulary {
	if a.vocab == nil {
		return &vocab
	}
	return a.vocab
}

func (a *analyzer) stem(w string) string { return a.info(w).stem }

func (a *analyzer) info(w string) *wordInfo {
	if a.words != nil {
		if wi, ok := a.words[w]; ok {
			return wi
		}
	}
	v := a.voc()
	wi := &wordInfo{stem: stem(w)}
	_, wi.first = v.firsts[wi.stem]
	if !stopWords[w] && keepWord(w) {
		wi.term = wi.stem
		if canon, ok := v.fold[wi.stem]; ok {
			wi.term = canon
		}
	}
	if a.words != nil {
		a.words[w] = wi
	}
	return wi
}

// analyze returns the tokens of text, synonyms folded.
func (a *analyzer) analyze(text string, out []token) []token {
	var buf [64]string
	words := splitWords(text, buf[:0])
	v := a.voc()
	for i := 0; i < len(words); i++ {
		w := words[i]
		wi := a.info(w)
		// Multi-word synonyms ("pull request", "merge requests") fold into
		// one term before stop words can split them.
		if wi.first && i+1 < len(words) {
			if canon, ok := v.phrases[[2]string{wi.stem, a.stem(words[i+1])}]; ok {
				out = append(out, token{word: w + " " + words[i+1], term: canon})
				i++
				continue
			}
		}
		if wi.term == "" {
			continue
		}
		t := token{word: w, term: wi.term}
		if a.words != nil {
			t.wi = wi
		}
		out = append(out, t)
	}
	return out
}

// terms returns only the index terms of text.
func (a *analyzer) terms(text string) []string {
	toks := a.analyze(text, nil)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.term
	}
	return out
}
