package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/quiver-mcp/quiver/gate"
)

// Session grants end with their session. The gate never applies one to
// another session (a session's ledger key carries the run, proxy/session.go),
// but a grant left unrevoked read "in force, until revoked" in quiver
// grants and on the operator page long after its session, and its quiver,
// had ended (issue 29). quiver revokes a session's grants when the session
// ends, and those of every run that is no longer running when it starts:
// each run leaves <state>/runs/<run>.json with its process id while it
// runs, so that a run that died without closing is told from one that is
// still running beside this one on the same state dir.

// runFile is where this run records its process id.
func runFile(stateDir, run string) string {
	return filepath.Join(stateDir, "runs", run+".json")
}

type runRecord struct {
	PID int `json:"pid"`
}

// markRun records this run as running; unmarkRun ends that.
func (s *Server) markRun() {
	if s.ledger == nil || s.opts.StateDir == "" {
		return
	}
	p := runFile(s.opts.StateDir, s.run)
	b, _ := json.Marshal(runRecord{PID: os.Getpid()})
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
		err = os.WriteFile(p, b, 0o600)
		if err == nil {
			return
		}
	}
	s.log.Warn("this run is not recorded in the state dir: a quiver started beside it will end its session grants, and they will be asked again", "run", s.run)
}

func (s *Server) unmarkRun() {
	if s.opts.StateDir != "" {
		_ = os.Remove(runFile(s.opts.StateDir, s.run))
	}
}

// runLive reports whether run is this one, or another whose process is
// still running.
func (s *Server) runLive(run string) bool {
	return run == s.run || runRunning(s.opts.StateDir, run)
}

// runRunning reports whether run's record in stateDir names a process
// that is still running.
func runRunning(stateDir, run string) bool {
	b, err := os.ReadFile(runFile(stateDir, run))
	var r runRecord
	if err != nil || json.Unmarshal(b, &r) != nil || r.PID <= 0 {
		return false
	}
	return r.PID == os.Getpid() || gate.ProcessAlive(r.PID)
}

// SessionStopped reports whether the quiver run that session (a ledger
// key, id@run) belongs to is no longer running, by the records runs leave
// in stateDir: quiver grants, which reads the ledger without a quiver,
// shows such a session's grants as ended before the next quiver start
// revokes them.
func SessionStopped(stateDir, session string) bool {
	_, run, ok := strings.Cut(session, "@")
	return !ok || !runRunning(stateDir, run)
}

// endStaleSessionGrants revokes the session grants whose run is no longer
// running: a quiver that was killed never ended its sessions.
func (s *Server) endStaleSessionGrants() {
	s.revokeSessionGrants("", func(g gate.Grant) bool {
		_, run, ok := strings.Cut(g.Session, "@")
		return !ok || !s.runLive(run)
	})
}

// endSessionGrants revokes the session grants of the session ss, which
// has ended.
func (s *Server) endSessionGrants(ss *session) {
	s.revokeSessionGrants(ss.key, func(g gate.Grant) bool { return g.Session == ss.key })
}

func (s *Server) revokeSessionGrants(key string, ended func(gate.Grant) bool) {
	if s.ledger == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	grants, err := s.ledger.Grants(ctx, gate.GrantFilter{Session: key})
	if err != nil {
		s.log.Warn("ending the grants of ended sessions failed", "err", err)
		return
	}
	n := 0
	for _, g := range grants {
		if g.Lifetime != gate.ForSession || !ended(g) {
			continue
		}
		if err := s.ledger.RevokeGrant(ctx, g.ID); err != nil {
			s.log.Warn("ending a grant of an ended session failed", "grant", g.ID, "err", err)
			continue
		}
		n++
	}
	if n > 0 {
		s.log.Info("grants of ended sessions ended", "grants", n)
	}
}
