package proxy

import (
	"cmp"
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// ledgerPins keeps the registry's pins in the ledger (gate/pins.go), so
// every quiver process and the CLI share them.
type ledgerPins struct{ l *gate.Ledger }

// NewPinStore is the registry's pin store in ledger l.
func NewPinStore(l *gate.Ledger) registry.PinStore { return ledgerPins{l} }

func (p ledgerPins) Pins(ctx context.Context, server string) (map[string]string, map[string]string, error) {
	return p.l.ToolPins(ctx, server)
}

func (p ledgerPins) Definition(ctx context.Context, digest string) (registry.Definition, error) {
	b, err := p.l.ToolDefinition(ctx, digest)
	if err != nil {
		return registry.Definition{}, err
	}
	return registry.ParseDefinition(b)
}

func (p ledgerPins) Pin(ctx context.Context, server, tool string, d registry.Definition, how string) (string, error) {
	canon := d.Canonical()
	return p.l.PinTool(ctx, server, tool, registry.DigestOf(canon), canon, how)
}

func (p ledgerPins) Hold(ctx context.Context, server, tool string, d registry.Definition) (bool, error) {
	canon := d.Canonical()
	return p.l.HoldTool(ctx, server, tool, registry.DigestOf(canon), canon)
}

func (p ledgerPins) Unhold(ctx context.Context, server, tool string) error {
	return p.l.UnholdTool(ctx, server, tool)
}

func (p ledgerPins) Version(ctx context.Context) (int64, error) { return p.l.PinClock(ctx) }

// PinJudge is how a definition diff learns what the gate makes of a
// definition: the fence's reading of argument names, and the class the
// annotations alone give (the policy's classes: overrides aside, since a
// diff is about what the server says).
func PinJudge() registry.Judge {
	return registry.Judge{
		PathArg: gate.IsPathArgName,
		Class: func(a mcp.ToolAnnotation) string {
			return string(gate.ClassOf("", gate.Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint,
				Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}, nil))
		},
	}
}

// pinMode is a server's pinning: its entry's, else policy.pinning's,
// else strict.
func (s *Server) pinMode(server string) string {
	srv, _ := s.cfg().Server(server)
	return cmp.Or(srv.Pinning, s.Policy().Pinning, registry.PinStrict)
}
