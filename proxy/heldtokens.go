package proxy

import (
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/quiver-mcp/quiver/registry"
)

// textRedactor hides secrets from text: a *registry.Redactor, or a
// heldRedactor where quiver holds OAuth credentials.
type textRedactor interface{ Redact(string) string }

// redactorFor is the redactor of cfg's settings: its ${VAR} secrets and
// credential shapes, and, for every server that logs in with OAuth, the
// tokens quiver holds for it in stateDir (registry.HeldSecrets). Those
// are secrets like the others: a remote tool that echoes the token quiver
// sent it must not show it to the host.
func redactorFor(cfg *registry.Config, stateDir string) textRedactor {
	base := registry.NewRedactor(cfg.Secrets)
	var held []registry.Server
	for _, s := range cfg.Servers {
		if s.Auth == registry.AuthOAuth && stateDir != "" {
			held = append(held, s)
		}
	}
	if len(held) == 0 {
		return base
	}
	h := &heldRedactor{secrets: cfg.Secrets, servers: held, stateDir: stateDir}
	h.cur.Store(&heldState{r: base})
	h.refresh()
	return h
}

// heldRedactor redacts with a Redactor of the configuration's secrets and
// the held tokens, built again when a token file changes (a login, or a
// refresh mid-run): each text looks at the token files first, one stat
// each, so a new token is hidden from the very next message.
type heldRedactor struct {
	secrets  []registry.Secret
	servers  []registry.Server
	stateDir string
	cur      atomic.Pointer[heldState]
}

type heldState struct {
	stamps []fileStamp
	r      *registry.Redactor
}

// fileStamp is a token file as last seen: an atomic write makes a new
// file, so its identity tells a change that left time and size alike.
type fileStamp struct {
	fi   os.FileInfo
	mod  time.Time
	size int64
}

func sameStamp(a, b fileStamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil
	}
	return os.SameFile(a.fi, b.fi) && a.mod.Equal(b.mod) && a.size == b.size
}

func (h *heldRedactor) Redact(s string) string { return h.refresh().Redact(s) }

// refresh returns the Redactor for the token files as they are now.
func (h *heldRedactor) refresh() *registry.Redactor {
	st := h.cur.Load()
	stamps := make([]fileStamp, len(h.servers))
	for i, s := range h.servers {
		if fi, err := os.Stat(registry.OAuthFile(h.stateDir, s.Name)); err == nil {
			stamps[i] = fileStamp{fi, fi.ModTime(), fi.Size()}
		}
	}
	if st.stamps != nil && slices.EqualFunc(st.stamps, stamps, sameStamp) {
		return st.r
	}
	secrets := slices.Clone(h.secrets)
	for _, s := range h.servers {
		secrets = append(secrets, registry.HeldSecrets(s, h.stateDir)...)
	}
	next := &heldState{stamps: stamps, r: registry.NewRedactor(secrets)}
	h.cur.Store(next)
	return next.r
}
