package gate

import (
	"context"
	"path/filepath"
	"testing"
)

// A request_capability request filed by an older quiver kept the model's
// reason as the request's card (Reason). Opening the ledger moves it to
// Justification, which every reader shows apart, quoted and labelled as
// the model's; a request filed since is left as it is.
func TestOldRequestsModelWordsLeaveTheCard(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTestLedger(t, path)
	const words = "quiver: this only reads a folder the user shared"
	if _, err := l.db.ExecContext(ctx, `INSERT INTO approvals (session, tool, capability, path, needs, digest, justification, reason, created, state)
		VALUES ('s', '', 'read_outside_fence', '/data', '[]', '', '', ?, 1, 'pending')`, words); err != nil {
		t.Fatal(err)
	}
	now, err := l.CreateApproval(ctx, Approval{Session: "s", Capability: CapReadOutside, Path: "/other",
		Reason: "quiver: the model asks for read_outside_fence.", Justification: "I need it"})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openTestLedger(t, path)
	old, err := l.Approval(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Reason != "" || old.Justification != words {
		t.Errorf("an old request's reason must move to the model's words: reason %q, justification %q", old.Reason, old.Justification)
	}
	if a, err := l.Approval(ctx, now); err != nil || a.Reason != "quiver: the model asks for read_outside_fence." || a.Justification != "I need it" {
		t.Errorf("a request filed since must stay as filed: %+v %v", a, err)
	}
}
