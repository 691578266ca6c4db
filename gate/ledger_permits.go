package gate

import (
	"context"
	"database/sql"
	"time"
)

// defaultPermitTTL is how long a one-use permit stays valid by default.
const defaultPermitTTL = 5 * time.Minute

// addPermit stores a one-use permit for exactly this call (session, tool,
// argument digest), valid for the permit TTL.
func (l *Ledger) addPermit(ctx context.Context, session, tool, digest string) (int64, error) {
	var id int64
	err := l.write(ctx, func(tx *sql.Tx) error {
		var err error
		id, err = insertPermit(ctx, tx, session, tool, digest, 0, l.now(), l.permitTTL)
		return err
	})
	return id, err
}

func insertPermit(ctx context.Context, tx *sql.Tx, session, tool, digest string, approval int64, now time.Time, ttl time.Duration) (int64, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO permits (session, tool, digest, created, expires, approval) VALUES (?,?,?,?,?,?)`,
		session, tool, digest, now.UnixMicro(), now.Add(ttl).UnixMicro(), nullID(approval))
	return insertedID("add permit", res, err)
}
