package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quiver-mcp/quiver/gate"
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

func stateFlags(fs *flag.FlagSet, c *common) {
	fs.StringVar(&c.stateDir, "state-dir", "", "quiver's state dir (default: $XDG_STATE_HOME/quiver)")
}

func approveCmd() *command {
	return &command{
		summary: "approve a pending request (for hosts that cannot show approval cards)",
		usage:   "approve N [--once|--session|--persistent [--expires D]] [--state-dir DIR]",
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

func denyCmd() *command {
	return &command{
		summary: "refuse a pending request",
		usage:   "deny N [--state-dir DIR]",
		help:    "Refuses pending request N; the model is told the user declined if it calls again.",
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

// approvalID reads "N [flags]" or "[flags] N".
func approvalID(fs *flag.FlagSet, args []string) (int64, error) {
	var n string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		n, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if n == "" && fs.NArg() == 1 {
		n = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return 0, fmt.Errorf("%w: unexpected %q", errUsage, fs.Arg(0))
	}
	if n == "" {
		return 0, fmt.Errorf("%w: give the request's number, e.g. quiver approve 3", errUsage)
	}
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
	a, err := l.ResolveApproval(ctx, id, r)
	switch {
	case errors.Is(err, gate.ErrNotFound):
		return fmt.Errorf("there is no request %d (quiver grants --pending lists the open ones)", id)
	case errors.Is(err, gate.ErrResolved):
		return fmt.Errorf("request %d was already answered: %v", id, err)
	case err != nil:
		return err
	}
	what := a.Capability
	if a.Path != "" {
		what += " " + a.Path
	}
	if a.Tool != "" {
		what = a.Tool + ": " + what
	}
	if r.Approve {
		fmt.Fprintf(e.stdout, "approved %d (%s) %s; the model may call again\n", id, r.Lifetime, what)
	} else {
		fmt.Fprintf(e.stdout, "denied %d %s\n", id, what)
	}
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
		usage:   "grants [--pending] [--all] [--revoke ID] [--json] [--state-dir DIR]",
		help: `
Lists the grants in force (persistent ones, and session ones of live
sessions) and the requests waiting for an answer. --all includes expired,
used and revoked grants; --revoke ID ends a grant at once.`,
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
				if err := l.RevokeGrant(ctx, revoke); err != nil {
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
			if !pendingOnly {
				if grants, err = l.Grants(ctx, gate.GrantFilter{All: all}); err != nil {
					return err
				}
			}
			if asJSON {
				b, _ := json.MarshalIndent(map[string]any{"pending": pending, "grants": grants}, "", "  ")
				fmt.Fprintln(e.stdout, string(b))
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PENDING\tSESSION\tTOOL\tCAPABILITY\tPATH\tREASON")
			for _, a := range pending {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Session, a.Tool, a.Capability, a.Path, oneLine(a.Reason, 80))
			}
			if !pendingOnly {
				fmt.Fprintln(tw, "\nGRANT\tSCOPE\tCAPABILITY\tTOOL\tPATH\tLIFETIME\tSESSION\tEXPIRES")
				for _, g := range grants {
					exp := "-"
					if !g.Expires.IsZero() {
						exp = g.Expires.Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Scope, g.Capability, g.Tool, g.Path, g.Lifetime, g.Session, exp)
				}
			}
			return tw.Flush()
		},
	}
}

func auditCmd() *command {
	return &command{
		summary: "show the calls quiver decided and how they ended",
		usage:   "audit [--since 1h] [--session S] [--tool GLOB] [--json] [--state-dir DIR]",
		help: `
Prints every recorded call: when, which session and tool, the decision (code
and sentence), the approval, and how it ended (ok, error, cancelled, or
outcome_unknown for a call that was running when quiver stopped — quiver
never retries those). Arguments are recorded only as a digest.`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			var since time.Duration
			var session, tool string
			var asJSON bool
			fs := newFlags("audit")
			stateFlags(fs, &c)
			fs.DurationVar(&since, "since", 0, "only calls newer than this, e.g. 1h")
			fs.StringVar(&session, "session", "", "only this session")
			fs.StringVar(&tool, "tool", "", "only tools matching this glob")
			fs.BoolVar(&asJSON, "json", false, "JSON lines")
			if err := parseFlagsOnly(fs, args); err != nil {
				return err
			}
			l, err := openLedger(ctx, e, &c)
			if err != nil {
				return err
			}
			defer l.Close()
			q := gate.AuditQuery{Session: session, Tool: tool}
			if since > 0 {
				q.Since = time.Now().Add(-since)
			}
			calls, err := l.Audit(ctx, q)
			if err != nil {
				return err
			}
			if asJSON {
				for _, ce := range calls {
					b, _ := json.Marshal(ce)
					fmt.Fprintln(e.stdout, string(b))
				}
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tSESSION\tTOOL\tCODE\tAPPROVAL\tOUTCOME\tREASON")
			for _, ce := range calls {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ce.ID, ce.Time.Local().Format("2006-01-02 15:04:05"),
					ce.Session, ce.Tool, ce.Code, dash(ce.Approval), dash(string(ce.Outcome)), oneLine(ce.Reason, 80))
			}
			return tw.Flush()
		},
	}
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
