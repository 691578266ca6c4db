package gate

import "context"

// Ping says whether the ledger's database answers: serve's /readyz waits
// for it.
func (l *Ledger) Ping(ctx context.Context) error {
	var one int
	return l.db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}
