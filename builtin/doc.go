// Package builtin holds quiver's own four tools, shown beside the
// downstream tools a search binds:
//
//   - search_tools finds downstream tools, skills and references in plain
//     words and binds the tools it finds for the session that asked; a loop
//     guard refuses the same search repeated in one turn.
//   - call_tool calls a bound tool by name, for hosts that never re-read
//     tools/list after a search.
//   - read_file reads a skill or reference a search found, or a text file
//     the gate allows, in bounded pieces.
//   - request_capability asks the person for a grant (a path outside the
//     fence, or a class of action for one tool) before a call needs it.
//
// Each handler asks for the small capabilities it needs (a Searcher, a
// Binder, a SearchMemory, a Caller, a Library, a FileReader, an Approver),
// defined here, so it never depends on how the proxy keeps its sessions.
// builtin decides nothing about policy: every call it makes, and every
// file it reads from disk, goes through the same gate as a direct
// tools/call. Bad arguments get a Refusal with a gate code and a sentence
// that says how to call again.
package builtin
