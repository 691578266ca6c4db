package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/internal/age"
	"github.com/quiver-mcp/quiver/proxy"
	"github.com/quiver-mcp/quiver/registry"
)

// openLedger opens the ledger in the state dir, the same file a running
// quiver serve writes.
func openLedger(ctx context.Context, e *env, c *common) (*gate.Ledger, error) {
	dir, err := c.state(e)
	if err != nil {
		return nil, err
	}
	return gate.OpenLedger(ctx, filepath.Join(dir, "ledger.db"))
}

// stateFlags are the flags of the ledger commands: the state dir, and the
// config whose secrets they hide from what they print.
func stateFlags(fs *pflag.FlagSet, c *common) {
	fs.StringVar(&c.stateDir, "state-dir", "", "quiver's state dir (default: "+stateDirHelp+")")
	fs.StringVar(&c.config, "config", "", "servers.yaml whose secrets to hide (default: servers.yaml in "+configDirHelp+", else built in)")
}

// redactor hides secrets in what a ledger command prints. The ledger
// holds what models wrote (paths, content, justifications) as they wrote
// it, and a model that read a token can put it there; so everything shown
// goes through registry.Redact with the credential shapes, the secrets of
// quiver's config (found as "quiver serve" finds it) and QUIVER_AUTH_TOKEN.
// A config that does not load costs its secrets, not the command: the
// shapes still apply, and stderr says so.
func redactor(e *env, c *common) func(string) string {
	var secrets []registry.Secret
	cfg, err := c.parse(e)
	if tok := strings.TrimSpace(e.getenv("QUIVER_AUTH_TOKEN")); tok != "" {
		secrets = append(secrets, registry.Secret{Var: "QUIVER_AUTH_TOKEN", Value: tok})
	}
	if err != nil {
		msg := registry.Redact(err.Error(), secrets)
		fmt.Fprintf(e.stderr, "quiver: the config's secrets are unknown, only well-known credential shapes are hidden: %s\n", msg)
	} else {
		secrets = append(secrets, cfg.Secrets...)
	}
	return func(s string) string { return registry.Redact(s, secrets) }
}

// writeRequest prints approval a as a person must read it before
// answering: what it needs, with every path, and the whole card quiver
// showed (or would have shown) in the host, each line indented. Nothing
// is cut or picked: a column holding "the first path" named a decoy
// argument while the real write went elsewhere.
func writeRequest(w io.Writer, a gate.Approval) {
	fmt.Fprintf(w, "request %d  session %s  tool %s  created %s\n", a.ID, printable(a.Session), printable(a.Tool),
		a.Created.Local().Format("2006-01-02 15:04:05"))
	for _, n := range a.Needs {
		switch {
		case n.Unresolved != "":
			fmt.Fprintf(w, "  Need: %s %q (not placed; counts as outside the allowed folders)\n", printable(n.Capability), n.Unresolved)
		case n.Path != "":
			fmt.Fprintf(w, "  Need: %s %q\n", printable(n.Capability), n.Path)
		default:
			fmt.Fprintf(w, "  Need: %s\n", printable(n.Capability))
		}
	}
	if len(a.Needs) == 0 && a.Capability != "" {
		fmt.Fprintf(w, "  Need: %s\n", printable(a.Capability))
	}
	if a.Reason != "" {
		fmt.Fprintln(w, "  Card:")
		for _, line := range strings.Split(strings.TrimRight(a.Reason, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", printable(line))
		}
	}
	// The model's words are never under "Card:": apart, quoted, labelled.
	if a.Justification != "" {
		fmt.Fprintf(w, "  %s\n", gate.ModelSays(a.Justification))
	}
}

// printable is s, or s quoted if it holds a control character: a
// terminal escape or a carriage return in a model's text could otherwise
// paint over the lines around it.
func printable(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
		return strconv.Quote(s)
	}
	return s
}

func approveCmd() *command {
	return &command{
		complete: completePending,
		summary:  "approve a pending request (for hosts that cannot show approval cards)",
		usage:    "approve N [--once|--session|--persistent [--expires D]] [--state-dir DIR] [--config PATH]",
		help: `
Approves pending request N, which quiver named in a refusal
(deny.approval_unavailable). With --once (the default) the exact call that
was refused may run once, within 5 minutes; --session grants the same need
for the rest of that session; --persistent grants it until revoked (or
until --expires, e.g. 24h). The model calls again after you approve.
Run "quiver grants" to see what is granted, "quiver deny N" to refuse.`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			var once, session, persistent bool
			var expires time.Duration
			fs := newFlags("approve")
			stateFlags(fs, &c)
			fs.BoolVar(&once, "once", false, "this call, once")
			fs.BoolVar(&session, "session", false, "for the session")
			fs.BoolVar(&persistent, "persistent", false, "until revoked")
			fs.DurationVar(&expires, "expires", 0, "persistent grants end after this long")
			id, err := approvalID(fs, args)
			if err != nil {
				return err
			}
			r := gate.Resolution{Approve: true, Lifetime: gate.Once}
			switch {
			case btoi(once)+btoi(session)+btoi(persistent) > 1:
				return fmt.Errorf("%w: choose one of --once, --session, --persistent", errUsage)
			case session:
				r.Lifetime = gate.ForSession
			case persistent:
				r.Lifetime = gate.Persistent
				if expires > 0 {
					r.Expires = time.Now().Add(expires)
				}
			}
			return resolveApproval(ctx, e, &c, id, r)
		},
	}
}

// completePending offers, as approve's or deny's number, the pending
// requests' numbers, each with its tool (read from the ledger, never
// starting anything).
func completePending(e *env, args []string, toComplete string) []string {
	var c common
	fs := newFlags("complete")
	fs.ParseErrorsAllowlist.UnknownFlags = true
	stateFlags(fs, &c)
	_ = fs.Parse(args)
	if fs.NArg() > 0 {
		return nil // the number is given already
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := openLedger(ctx, e, &c)
	if err != nil {
		return nil
	}
	defer l.Close()
	pending, err := l.Approvals(ctx, gate.ApprovalFilter{State: gate.Pending})
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range pending {
		if id := strconv.FormatInt(a.ID, 10); strings.HasPrefix(id, toComplete) {
			out = append(out, id+"\t"+oneLine(a.Tool, 60))
		}
	}
	return out
}

func denyCmd() *command {
	return &command{
		complete: completePending,
		summary:  "refuse a pending request",
		usage:    "deny N [--state-dir DIR] [--config PATH]",
		help:     "Refuses pending request N; the model is told the user declined if it calls again.",
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			fs := newFlags("deny")
			stateFlags(fs, &c)
			id, err := approvalID(fs, args)
			if err != nil {
				return err
			}
			return resolveApproval(ctx, e, &c, id, gate.Resolution{Approve: false})
		},
	}
}

// approvalID reads the one request number among args and parses the
// flags around it.
func approvalID(fs *pflag.FlagSet, args []string) (int64, error) {
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	switch {
	case fs.NArg() == 0:
		return 0, fmt.Errorf("%w: give the request's number, e.g. quiver approve 3", errUsage)
	case fs.NArg() > 1:
		return 0, fmt.Errorf("%w: unexpected %q", errUsage, fs.Arg(1))
	}
	n := fs.Arg(0)
	id, err := strconv.ParseInt(n, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: %q is not a request number", errUsage, n)
	}
	return id, nil
}

func resolveApproval(ctx context.Context, e *env, c *common, id int64, r gate.Resolution) error {
	l, err := openLedger(ctx, e, c)
	if err != nil {
		return err
	}
	defer l.Close()
	red := redactor(e, c)
	a, err := l.ResolveApproval(ctx, id, r)
	switch {
	case errors.Is(err, gate.ErrNotFound):
		return fmt.Errorf("there is no request %d (quiver grants --pending lists the open ones)", id)
	case errors.Is(err, gate.ErrResolved):
		if a, aerr := l.Approval(ctx, id); aerr == nil && a.State == gate.Expired {
			return fmt.Errorf("request %d expired: the session that asked ended (its host disconnected or quiver stopped), so no model can retry the call; nothing was granted. If the model asks again, answer the new request", id)
		}
		return fmt.Errorf("request %d was already answered: %v", id, err)
	case err != nil:
		return err
	}
	a.Redact(red)
	if r.Approve {
		// The ledger may narrow the lifetime (a path it could not place
		// is approved once): say what was granted, not what was asked.
		lifetime := r.Lifetime
		if a.Lifetime != "" {
			lifetime = a.Lifetime
		}
		fmt.Fprintf(e.stdout, "approved %d (%s); the model may call again. You approved:\n", id, lifetime)
	} else {
		fmt.Fprintf(e.stdout, "denied %d. You refused:\n", id)
	}
	writeRequest(e.stdout, a)
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func grantsCmd() *command {
	return &command{
		summary: "list grants and pending requests; revoke a grant",
		usage:   "grants [--pending] [--all] [--revoke ID] [--json] [--state-dir DIR] [--config PATH]",
		help: `
Lists the grants in force (persistent ones, and session ones of live
sessions) and the requests waiting for an answer. A session grant ends
with its session, or when its quiver stops. --all includes expired, used,
revoked and ended grants; --revoke ID ends a grant at once.

Each pending request shows what it needs (every path) and the whole card
quiver showed, or would have shown, in the host. What these commands print
is redacted: well-known credential shapes, and the secrets of servers.yaml
(--config, found as "quiver serve" finds it) and of QUIVER_AUTH_TOKEN.`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			var all, pendingOnly, asJSON bool
			var revoke int64
			fs := newFlags("grants")
			stateFlags(fs, &c)
			fs.BoolVar(&all, "all", false, "include ended grants")
			fs.BoolVar(&pendingOnly, "pending", false, "only pending requests")
			fs.BoolVar(&asJSON, "json", false, "JSON")
			fs.Int64Var(&revoke, "revoke", 0, "grant to revoke")
			if err := parseFlagsOnly(fs, args); err != nil {
				return err
			}
			l, err := openLedger(ctx, e, &c)
			if err != nil {
				return err
			}
			defer l.Close()
			if revoke > 0 {
				if err := l.RevokeGrant(ctx, revoke); errors.Is(err, gate.ErrNotFound) {
					return fmt.Errorf("there is no grant %d in force: it was revoked or ended already, or never existed (quiver grants --all lists every grant)", revoke)
				} else if err != nil {
					return fmt.Errorf("revoke grant %d: %w", revoke, err)
				}
				fmt.Fprintf(e.stdout, "revoked grant %d\n", revoke)
				return nil
			}
			pending, err := l.Approvals(ctx, gate.ApprovalFilter{State: gate.Pending})
			if err != nil {
				return err
			}
			var grants []gate.Grant
			stopped := map[int64]bool{}
			if !pendingOnly {
				if grants, err = l.Grants(ctx, gate.GrantFilter{All: all}); err != nil {
					return err
				}
				// A session grant of a quiver that stopped without ending
				// its sessions (killed) is over, though the next quiver's
				// start has yet to revoke it.
				state, _ := c.state(e)
				kept := grants[:0]
				for _, g := range grants {
					if g.Lifetime == gate.ForSession && g.Revoked.IsZero() && proxy.SessionStopped(state, g.Session) {
						stopped[g.ID] = true
						if !all {
							continue
						}
					}
					kept = append(kept, g)
				}
				grants = kept
			}
			red := redactor(e, &c)
			for i := range pending {
				pending[i].Redact(red)
			}
			for i := range grants {
				grants[i].Redact(red)
			}
			if asJSON {
				b, _ := json.MarshalIndent(map[string]any{"pending": pending, "grants": grants}, "", "  ")
				fmt.Fprintln(e.stdout, string(b))
				return nil
			}
			if len(pending) == 0 {
				fmt.Fprintln(e.stdout, "No pending requests.")
			} else {
				fmt.Fprintln(e.stdout, "Pending requests (answer with quiver approve N or quiver deny N):")
			}
			for _, a := range pending {
				fmt.Fprintln(e.stdout)
				writeRequest(e.stdout, a)
			}
			if !pendingOnly {
				fmt.Fprintln(e.stdout)
				tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GRANT\tSCOPE\tCAPABILITY\tTOOL\tPATH\tLIFETIME\tSESSION\tENDS")
				for _, g := range grants {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Scope, oneLine(g.Capability, 200), oneLine(g.Tool, 200),
						quotedPath(g.Path), g.Lifetime, oneLine(g.Session, 200), grantEnds(g, stopped[g.ID]))
				}
				return tw.Flush()
			}
			return nil
		},
	}
}

func auditCmd() *command {
	return &command{
		summary: "show the calls quiver decided and how they ended",
		usage:   "audit [--since 1h|7d] [--session S] [--tool GLOB] [--limit N] [--json] [--state-dir DIR] [--config PATH]",
		help: `
Prints every recorded call: when, which session and tool, the decision (code
and sentence), the approval, and how it ended (ok, error, cancelled, or
outcome_unknown for a call that was running when quiver stopped — quiver
never retries those). A call that failed shows why in place of the
decision's sentence: the server's error text, redacted and cut to 500
bytes ("detail" in --json). Arguments are recorded only as a digest.

It shows the latest 1,000 calls (--limit N for another number) and says on
stderr when older ones were left out. --session takes a session's id as
the log prints it (session=...), or the id@run the audit shows.

With --json, each call is one line whose "stages" are its evidence chain,
named as the operator page names them: requested, decided, approved (the
answer to its card, when one was asked), started, ended.`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			var since time.Duration
			var session, tool string
			var asJSON bool
			var limit int
			fs := newFlags("audit")
			stateFlags(fs, &c)
			var sinceAge age.Value
			fs.Var(&sinceAge, "since", "only calls newer than this, e.g. 1h or 7d")
			fs.StringVar(&session, "session", "", "only this session (its id, as the log prints it, or id@run)")
			fs.StringVar(&tool, "tool", "", "only tools matching this glob")
			fs.IntVar(&limit, "limit", 1000, "show at most this many calls, the latest")
			fs.BoolVar(&asJSON, "json", false, "JSON lines")
			if err := parseFlagsOnly(fs, args); err != nil {
				return err
			}
			since = sinceAge.D
			l, err := openLedger(ctx, e, &c)
			if err != nil {
				return err
			}
			defer l.Close()
			if limit < 1 {
				return fmt.Errorf("%w: --limit %d: give 1 or more", errUsage, limit)
			}
			// One more than shown, to know whether older calls were left out.
			q := gate.AuditQuery{Session: session, Tool: tool, Limit: limit + 1}
			if since > 0 {
				q.Since = time.Now().Add(-since)
			}
			calls, err := l.Audit(ctx, q)
			if err != nil {
				return err
			}
			if len(calls) > limit {
				calls = calls[1:]
				fmt.Fprintf(e.stderr, "quiver audit: showing the latest %d calls; older ones match too (use --limit N or --since D)\n", limit)
			}
			red := redactor(e, &c)
			for i := range calls {
				calls[i].Redact(red)
			}
			if asJSON {
				for _, ce := range calls {
					b, _ := json.Marshal(auditLine(ce))
					fmt.Fprintln(e.stdout, string(b))
				}
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tSESSION\tTOOL\tCODE\tAPPROVAL\tOUTCOME\tREASON")
			for _, ce := range calls {
				// A call that failed says why (the server's words, as the
				// ledger keeps them), not only why it was let through.
				why := ce.Reason
				if ce.Detail != "" && ce.Outcome != gate.OutcomeOK {
					why = "failed: " + ce.Detail
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ce.ID, ce.Time.Local().Format("2006-01-02 15:04:05"),
					oneLine(ce.Session, 200), oneLine(ce.ToolShown(), 200), ce.Code, dash(ce.Approval), dash(string(ce.Outcome)), oneLine(why, 120))
			}
			return tw.Flush()
		},
	}
}

// auditJSON is one call as quiver audit --json prints it: the ledger's
// record, and its evidence chain as named stages (requested, decided,
// approved, started, ended), the names the operator page shows.
type auditJSON struct {
	gate.CallEntry
	Stages []gate.Stage `json:"stages"`
}

func auditLine(ce gate.CallEntry) auditJSON { return auditJSON{CallEntry: ce, Stages: ce.Stages()} }

// grantEnds says when a grant ends, or that it has: a session grant lasts
// as long as its session, not "until revoked".
func grantEnds(g gate.Grant, stopped bool) string {
	switch {
	case !g.Revoked.IsZero():
		return "ended " + g.Revoked.Local().Format(time.RFC3339)
	case !g.Used.IsZero():
		return "used " + g.Used.Local().Format(time.RFC3339)
	case stopped:
		return "ended: its quiver stopped"
	case !g.Expires.IsZero():
		return g.Expires.Local().Format(time.RFC3339)
	case g.Lifetime == gate.ForSession:
		return "when its session ends"
	case g.Lifetime == gate.Persistent:
		return "until revoked"
	}
	return "-"
}

// quotedPath is a grant's path quoted, so that a space or tab in it cannot
// shift the columns; "-" for a grant on a tool.
func quotedPath(p string) string {
	if p == "" {
		return "-"
	}
	return strconv.Quote(p)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
