package operator

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// A changeRow is a tool held because its server changed its definition:
// what `quiver tools changes` prints, with buttons.
type changeRow struct {
	Exposed, Server, Name string
	Digest                string // the definition shown; accept pins exactly it
	Diff                  []diffLine
	Flags                 int
	Rejected              bool
}

type diffLine struct {
	Text    string
	Flagged bool
}

// changes are the catalog's held tools, their diffs redacted.
func (h *Handler) changes(cat *registry.Catalog) []changeRow {
	var out []changeRow
	if cat == nil {
		return nil
	}
	for _, t := range cat.Tools {
		if t.Held == nil {
			continue
		}
		row := changeRow{Exposed: t.Exposed, Server: t.Server, Name: t.Name, Digest: t.Digest,
			Flags: len(t.Held.Diff.Flags()), Rejected: t.Held.Rejected}
		for _, c := range t.Held.Diff {
			row.Diff = append(row.Diff, diffLine{Text: h.p.Redact(registry.Diff{{Kind: c.Kind, Field: c.Field, Old: c.Old, New: c.New}}.Text(""))})
			if c.Flag != "" {
				row.Diff = append(row.Diff, diffLine{Text: "! " + h.p.Redact(c.Flag), Flagged: true})
			}
		}
		out = append(out, row)
	}
	return out
}

// decideChange accepts (pins the definition shown) or rejects (keeps it
// held, switches the tool off) a held tool, as quiver tools accept and
// reject do; the running quiver follows the ledger within a second.
func (h *Handler) decideChange(w http.ResponseWriter, r *http.Request) {
	name, accept := r.PostFormValue("name"), r.URL.Path == "/tools/accept"
	t, ok := h.p.Catalog().Lookup(name)
	l := h.p.Ledger()
	switch {
	case !ok || t.Held == nil:
		h.fail(w, http.StatusBadRequest, fmt.Errorf("%w: %q is not held", errBadForm, name))
		return
	case l == nil:
		h.fail(w, http.StatusInternalServerError, errors.New("quiver runs without a state dir: there is no ledger to pin in"))
		return
	}
	digest := r.PostFormValue("digest")
	if accept && digest == "" {
		// The page pins what it showed, never what arrived since.
		h.fail(w, http.StatusBadRequest, fmt.Errorf("%w: accept says which definition it accepts (digest); reload the page", errBadForm))
		return
	}
	var said string
	if accept {
		if _, err := l.AcceptHeld(r.Context(), t.Server, registry.PinName(t.Name), digest); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, gate.ErrNotFound) {
				code = http.StatusConflict
			}
			h.fail(w, code, err)
			return
		}
		said = fmt.Sprintf("Accepted %s: its new definition is pinned; quiver offers it within a second.", name)
	} else {
		if err := l.RejectTool(r.Context(), t.Server, registry.PinName(t.Name)); err != nil {
			h.fail(w, http.StatusInternalServerError, err)
			return
		}
		if h.opts.Toggles != "" {
			if _, err := registry.SwitchTools(h.opts.Toggles, false, []string{name}); err != nil {
				h.fail(w, http.StatusInternalServerError, err)
				return
			}
		}
		said = fmt.Sprintf("Rejected %s: it stays held, and is switched off in %s.", name, h.opts.Toggles)
	}
	h.log.Info("operator page decided a changed tool definition", "tool", name, "accept", accept)
	http.Redirect(w, r, "/tools?said="+url.QueryEscape(said), http.StatusSeeOther)
}
