// Package index owns quiver's search over tools, skills and references: it
// turns catalog entries into an in-memory index (postings of its own,
// scored with BM25 as bluge v0.2.2 computes it; bluge's English stemmer)
// with an analyzer built for tool names (snake_case, camelCase, server
// prefixes), a small general vocabulary of the field's abbreviations, typo
// correction against the catalog's own words, and ranks hits with BM25F
// over weighted fields plus a plain
// "weak match" verdict. It ranks servers too — a server's document is its
// tools' text and what it says about itself — and offers the likeliest
// names past the hits, by one score (a ranked candidate's, or its
// server's standing for the best servers' tools), in the room the caller's
// answer leaves. It lists a server's entries on request. It also finds the closest
// exposed names for "no such tool" answers. It never touches the network,
// loads no model weights, writes nothing to disk, knows nothing of
// sessions, bindings or policy, and an Index never changes after Build: a
// new catalog means a new Index, swapped in by the caller.
//
// Ranking is measured on three query sets (eval_test.go): dev, which it is
// tuned on, and fresh and blind, which judge it and are never tuned on.
package index
