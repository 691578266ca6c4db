package operator

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/internal/age"
	"github.com/quiver-mcp/quiver/internal/toolresult"
	"github.com/quiver-mcp/quiver/registry"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	"ms": func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	},
	"score": func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) },
	"join":  strings.Join,
	"lower": strings.ToLower,
	"pages": func() []string { return []string{"Approvals", "Tools", "Search", "Audit", "Grants"} },
	// A model's words are shown apart from quiver's card, labelled, and
	// quoted as the CLI and the host's card quote them (gate.ModelSays).
	"modelSaysLabel": func() string { return gate.ModelSaysLabel },
	"quote":          strconv.Quote,
	// plain escapes what would paint over or reorder the text around it
	// (control characters, bidi and other format characters) in text a
	// server or a model chose, as the CLI does.
	"plain": plainText,
}

func staticFS() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded folder is there, or this does not build
	}
	return sub
}

// page is what every page's template gets. It holds no page key: the
// page's script puts it in each form (operator.go says why).
type page struct {
	Title string // also the nav entry shown as current
	Flash string
	Data  any
}

func (h *Handler) render(w http.ResponseWriter, name, title, flash string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.pages.ExecuteTemplate(w, name, page{Title: title, Flash: flash, Data: data}); err != nil {
		h.log.Error("operator page failed", "page", name, "err", err)
	}
}

func (h *Handler) fail(w http.ResponseWriter, code int, err error) {
	http.Error(w, "quiver: "+h.p.Redact(err.Error()), code)
}

// --- Approvals ---

// A card is a pending approval as the page shows it.
type card struct {
	gate.Approval
	// Waiting is set when a call waits for this answer now; an older
	// request can still be answered (its call, run again, then passes).
	Waiting bool
}

func (h *Handler) pending(r *http.Request) ([]card, error) {
	l := h.p.Ledger()
	if l == nil {
		return nil, errNoLedger
	}
	as, err := l.Approvals(r.Context(), gate.ApprovalFilter{State: gate.Pending})
	if err != nil {
		return nil, err
	}
	waiting := h.p.Waiting()
	out := make([]card, 0, len(as))
	// Newest first: the card a call waits for now is at the top.
	for _, a := range slices.Backward(as) {
		a.Redact(h.p.Redact)
		out = append(out, card{Approval: a, Waiting: slices.Contains(waiting, a.ID)})
	}
	slices.SortStableFunc(out, func(a, b card) int {
		if a.Waiting != b.Waiting {
			if a.Waiting {
				return -1
			}
			return 1
		}
		return 0
	})
	return out, nil
}

var errNoLedger = errors.New("quiver runs without a state dir here, so there is no ledger to read or answer")

func (h *Handler) approvals(w http.ResponseWriter, r *http.Request) {
	cards, err := h.pending(r)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	h.render(w, "approvals.html", "Approvals", r.URL.Query().Get("said"), cards)
}

// cards is the card list alone, which the page's script swaps in when the
// event stream says it changed.
func (h *Handler) cards(w http.ResponseWriter, r *http.Request) {
	cards, err := h.pending(r)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	h.render(w, "cards", "Approvals", "", cards)
}

// events streams the ids of the pending approvals (server-sent events):
// at once, whenever a call starts or stops waiting, and every two seconds
// for requests another quiver filed in the same ledger.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "quiver: streaming is not supported here", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick, stop := h.p.WatchApprovals()
	defer stop()
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	last, sent := "", false
	for {
		cards, err := h.pending(r)
		if err == nil {
			ids := make([]string, len(cards))
			for i, c := range cards {
				ids[i] = strconv.FormatInt(c.ID, 10)
				if c.Waiting {
					ids[i] += "w"
				}
			}
			// "7w,5": request 7 has a call waiting, 5 is older.
			if now := strings.Join(ids, ","); now != last || !sent {
				last, sent = now, true
				fmt.Fprintf(w, "event: cards\ndata: %s\n\n", now)
				fl.Flush()
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick:
		case <-poll.C:
		}
	}
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, http.StatusBadRequest, fmt.Errorf("%w: %q is not a request number", errBadForm, r.PathValue("id")))
		return
	}
	var res gate.Resolution
	switch r.PostFormValue("decision") {
	case "once":
		res = gate.Resolution{Approve: true, Lifetime: gate.Once}
	case "session":
		res = gate.Resolution{Approve: true, Lifetime: gate.ForSession}
	case "deny":
		res = gate.Resolution{Approve: false}
	default:
		h.fail(w, http.StatusBadRequest, fmt.Errorf("%w: decision must be once, session or deny", errBadForm))
		return
	}
	if h.p.Ledger() == nil {
		h.fail(w, http.StatusConflict, errNoLedger)
		return
	}
	a, err := h.p.Answer(r.Context(), id, res)
	var said string
	switch {
	case errors.Is(err, gate.ErrNotFound):
		h.fail(w, http.StatusNotFound, fmt.Errorf("there is no request %d", id))
		return
	case errors.Is(err, gate.ErrResolved):
		said = fmt.Sprintf("Request %d was already answered; the first answer stands.", id)
	case err != nil:
		h.fail(w, http.StatusInternalServerError, err)
		return
	case a.State == gate.Approved:
		said = fmt.Sprintf("Request %d allowed (%s).", id, a.Lifetime)
	default:
		said = fmt.Sprintf("Request %d denied.", id)
	}
	h.log.Info("operator page answered an approval", "approval", id, "state", a.State, "lifetime", a.Lifetime)
	http.Redirect(w, r, "/approvals?said="+url.QueryEscape(said), http.StatusSeeOther)
}

// --- Tools ---

type toolRow struct {
	registry.Tool
	Class string
}

type toolsData struct {
	Changes []changeRow // held tools
	Servers []registry.ServerStatus
	Tools   []toolRow
	Filter  string
	Toggles string
}

func (h *Handler) tools(w http.ResponseWriter, r *http.Request) {
	cat := h.p.Catalog()
	d := toolsData{Filter: r.URL.Query().Get("q"), Toggles: h.opts.Toggles}
	if cat != nil {
		d.Changes = h.changes(cat)
		d.Servers = cat.Servers
		for i := range d.Servers {
			d.Servers[i].LastError = h.p.Redact(d.Servers[i].LastError)
			d.Servers[i].LastWords = h.p.Redact(d.Servers[i].LastWords)
		}
		f := strings.ToLower(d.Filter)
		for _, t := range cat.Tools {
			row := toolRow{Tool: t, Class: string(h.p.Class(t))}
			if f != "" && !strings.Contains(strings.ToLower(t.Exposed+" "+t.Server+" "+row.Class+" "+t.Description), f) {
				continue
			}
			d.Tools = append(d.Tools, row)
		}
	}
	h.render(w, "tools.html", "Tools", r.URL.Query().Get("said"), d)
}

// switchTool writes the toggles file as quiver tools enable/disable does;
// the running quiver's watcher applies it.
func (h *Handler) switchTool(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("name")
	on := r.PostFormValue("on") == "1"
	if _, ok := h.p.Catalog().Lookup(name); !ok || h.opts.Toggles == "" {
		h.fail(w, http.StatusBadRequest, fmt.Errorf("%w: no tool %q to switch", errBadForm, name))
		return
	}
	if _, err := registry.SwitchTools(h.opts.Toggles, on, []string{name}); err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	verb := map[bool]string{true: "Enabled", false: "Disabled"}[on]
	h.log.Info("operator page switched a tool", "tool", name, "on", on, "toggles", h.opts.Toggles)
	said := fmt.Sprintf("%s %s in %s; quiver applies it within a second.", verb, name, h.opts.Toggles)
	http.Redirect(w, r, "/tools?q="+url.QueryEscape(r.PostFormValue("q"))+"&said="+url.QueryEscape(said), http.StatusSeeOther)
}

// --- Search ---

type searchHit struct {
	Name, Kind, Description string
	Score                   float64
	// Found says which of the tool's fields hold which query words.
	Found []string
}

type searchData struct {
	Query   string
	Text    string // the answer as the model reads it
	Refused bool
	Weak    bool
	Hits    []searchHit
	Servers []struct {
		Name  string   `json:"name"`
		Score float64  `json:"score"`
		More  []string `json:"more"`
	}
	Bound []string
}

func (h *Handler) search(w http.ResponseWriter, r *http.Request) {
	d := searchData{Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	if d.Query != "" {
		// The search a model sends with a query alone: the page shows the
		// hits search_tools would bind, and the names it would offer.
		args, _ := json.Marshal(map[string]any{"query": d.Query})
		res := h.p.Search(r.Context(), args)
		d.Text, d.Refused = toolresult.Text(res), res.IsError
		var sc struct {
			Hits []struct {
				Name        string  `json:"name"`
				Kind        string  `json:"kind"`
				Description string  `json:"description"`
				Score       float64 `json:"score"`
			} `json:"hits"`
			Servers json.RawMessage `json:"servers"`
			Bound   []string        `json:"bound"`
			Weak    bool            `json:"weak"`
		}
		if b, err := json.Marshal(res.StructuredContent); err == nil && json.Unmarshal(b, &sc) == nil {
			d.Weak, d.Bound = sc.Weak, sc.Bound
			_ = json.Unmarshal(sc.Servers, &d.Servers)
			for _, hit := range sc.Hits {
				d.Hits = append(d.Hits, searchHit{Name: hit.Name, Kind: hit.Kind, Description: hit.Description, Score: hit.Score,
					Found: h.found(d.Query, hit.Name)})
			}
		}
	}
	h.render(w, "search.html", "Search", "", d)
}

// found says, for a hit that is a catalog tool, which of its fields hold
// which words of the query, as written (the index also matches stems,
// synonyms and corrected typos, which this does not show).
func (h *Handler) found(query, name string) []string {
	t, ok := h.p.Catalog().Lookup(name)
	if !ok {
		return nil
	}
	var params []string
	for _, p := range index.ParamsFromSchema(t.InputSchema) {
		params = append(params, p.Name+" "+p.Description)
	}
	fields := []struct{ name, text string }{
		{"name", t.Exposed}, {"title", t.Title}, {"description", t.Description},
		{"server", t.Server}, {"parameters", strings.Join(params, " ")},
	}
	var out []string
	for _, f := range fields {
		text := strings.ToLower(f.text)
		var words []string
		for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) {
			if len(w) > 1 && strings.Contains(text, w) && !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
		if len(words) > 0 {
			out = append(out, f.name+": "+strings.Join(words, ", "))
		}
	}
	return out
}

// --- Audit ---

type auditRow struct {
	gate.CallEntry
	Stages []gate.Stage
}

type auditData struct {
	Tool, Verdict, Outcome, Since string
	Rows                          []auditRow
	Verdicts                      []string
	Outcomes                      []string
}

func (h *Handler) audit(w http.ResponseWriter, r *http.Request) {
	l := h.p.Ledger()
	if l == nil {
		h.fail(w, http.StatusConflict, errNoLedger)
		return
	}
	q := r.URL.Query()
	d := auditData{Tool: q.Get("tool"), Verdict: q.Get("verdict"), Outcome: q.Get("outcome"), Since: q.Get("since"),
		Verdicts: []string{"allow", "ask", "deny"},
		Outcomes: []string{string(gate.OutcomeOK), string(gate.OutcomeError), string(gate.OutcomeCancelled), string(gate.OutcomeUnknown)}}
	aq := gate.AuditQuery{Tool: d.Tool, Verdict: d.Verdict, Outcome: gate.Outcome(d.Outcome), Limit: 500}
	if d.Since != "" {
		since, err := age.Parse(d.Since)
		if err != nil {
			h.fail(w, http.StatusBadRequest, fmt.Errorf("%w: since %w", errBadForm, err))
			return
		}
		aq.Since = time.Now().Add(-since)
	}
	calls, err := l.Audit(r.Context(), aq)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	// Newest first, as a person reads a log on a page.
	for _, ce := range slices.Backward(calls) {
		ce.Redact(h.p.Redact)
		d.Rows = append(d.Rows, auditRow{CallEntry: ce, Stages: ce.Stages()})
	}
	h.render(w, "audit.html", "Audit", "", d)
}

// --- Grants ---

func (h *Handler) grants(w http.ResponseWriter, r *http.Request) {
	l := h.p.Ledger()
	if l == nil {
		h.fail(w, http.StatusConflict, errNoLedger)
		return
	}
	gs, err := l.Grants(r.Context(), gate.GrantFilter{})
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	for i := range gs {
		gs[i].Redact(h.p.Redact)
	}
	h.render(w, "grants.html", "Grants", r.URL.Query().Get("said"), gs)
}

func (h *Handler) revoke(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, http.StatusBadRequest, fmt.Errorf("%w: %q is not a grant number", errBadForm, r.PathValue("id")))
		return
	}
	l := h.p.Ledger()
	if l == nil {
		h.fail(w, http.StatusConflict, errNoLedger)
		return
	}
	if err := l.RevokeGrant(r.Context(), id); err != nil {
		if errors.Is(err, gate.ErrNotFound) {
			h.fail(w, http.StatusNotFound, fmt.Errorf("there is no grant %d in force: it was revoked or ended already, or never existed", id))
			return
		}
		h.fail(w, http.StatusInternalServerError, fmt.Errorf("revoke grant %d: %w", id, err))
		return
	}
	h.log.Info("operator page revoked a grant", "grant", id)
	http.Redirect(w, r, "/grants?said="+url.QueryEscape(fmt.Sprintf("Revoked grant %d.", id)), http.StatusSeeOther)
}

// plainText is s with control and format characters (ESC, U+202E and the
// other bidi controls, zero-width and tag characters) written as \u
// escapes.
func plainText(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r != '\t' && unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
