package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/yosida95/uritemplate/v3"
)

// Resource URIs pass through unchanged when they cannot be confused: a URI
// scheme that only one server uses stays as it is. When two servers use the
// same scheme (two filesystem servers both serving file://), every URI and
// template of that scheme from those servers is listed as
//
//	quiver://<server>/<the server's own URI>
//
// which maps back by cutting the prefix: server names never hold '/', and
// a template keeps its variables where they were, so clients expand it as
// usual. A bare URI reads from the one server that uses its scheme; a URI
// whose scheme no server lists reads from the only server that offers
// resources, if there is just one (its own error then says what is wrong),
// and is otherwise an error naming the URI.

const quiverScheme = "quiver://"

// catchAll is the one template quiver registers with mcp-go: every
// resources/read reaches readResource, which routes it. It never shows in
// resources/templates/list.
const catchAll = "{+uri}"

// resourceView is the merged resource lists, swapped as one.
type resourceView struct {
	resources []mcp.Resource
	templates []mcp.ResourceTemplate
	schemes   map[string]string // scheme -> its one server
	shared    map[string]bool   // schemes two or more servers use
	offering  []string          // servers that offer resources at all
}

// ErrNoResourceServer is the error for a URI no server offers.
var ErrNoResourceServer = errors.New("no server offers this resource")

func schemeOf(uri string) string {
	i := strings.Index(uri, ":")
	if i <= 0 || strings.ContainsAny(uri[:i], "/{}?#") {
		return ""
	}
	return strings.ToLower(uri[:i])
}

func templateRaw(t mcp.ResourceTemplate) string {
	if t.URITemplate == nil || t.URITemplate.Template == nil {
		return ""
	}
	return t.URITemplate.Raw()
}

// rebuildResources merges the views' resources into a new resourceView
// and, when the lists changed and notify is set, tells every session.
func (m *mirror) rebuildResources(notify bool) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	rv := &resourceView{schemes: map[string]string{}, shared: map[string]bool{}}
	users := map[string]map[string]bool{} // scheme -> servers
	views := m.ordered()
	use := func(scheme, srv string) {
		if users[scheme] == nil {
			users[scheme] = map[string]bool{}
		}
		users[scheme][srv] = true
	}
	for _, e := range views {
		if e.v.caps.Resources != nil {
			rv.offering = append(rv.offering, e.srv.Name)
		}
		for _, r := range e.v.resources {
			use(schemeOf(r.URI), e.srv.Name)
		}
		for _, t := range e.v.templates {
			use(schemeOf(templateRaw(t)), e.srv.Name)
		}
	}
	for scheme, who := range users {
		if len(who) > 1 {
			rv.shared[scheme] = true
			continue
		}
		for srv := range who {
			rv.schemes[scheme] = srv
		}
	}
	for _, e := range views {
		for _, r := range e.v.resources {
			r.URI = rv.expose(e.srv.Name, r.URI)
			rv.resources = append(rv.resources, r)
		}
		for _, t := range e.v.templates {
			raw := rv.expose(e.srv.Name, templateRaw(t))
			tpl, err := uritemplate.New(raw)
			if err != nil {
				m.s.log.Warn("resource template left out", "server", e.srv.Name, "template", templateRaw(t), "err", err)
				continue
			}
			t.URITemplate = &mcp.URITemplate{Template: tpl}
			rv.templates = append(rv.templates, t)
		}
	}
	old := m.res.Swap(rv)
	if notify && !sameLists(old, rv) {
		m.s.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationResourcesListChanged), nil)
	}
}

func sameLists(a, b *resourceView) bool {
	ja, _ := json.Marshal([]any{a.resources, a.templates})
	jb, _ := json.Marshal([]any{b.resources, b.templates})
	return reflect.DeepEqual(ja, jb)
}

// expose maps a server's own URI (or template) to the one quiver lists.
func (rv *resourceView) expose(srv, uri string) string {
	if rv.shared[schemeOf(uri)] {
		return quiverScheme + srv + "/" + uri
	}
	return uri
}

func (m *mirror) exposeURI(srv, uri string) string { return m.res.Load().expose(srv, uri) }

// resolve maps a URI a client sent to the server and the server's own URI.
func (m *mirror) resolve(uri string) (srv, orig string, err error) {
	rv := m.res.Load()
	if rest, ok := strings.CutPrefix(uri, quiverScheme); ok {
		srv, orig, ok = strings.Cut(rest, "/")
		if _, known := m.s.cfg().Server(srv); !ok || !known || orig == "" {
			return "", "", fmt.Errorf("%w: %q names no server of quiver's (the form is quiver://<server>/<uri>)", ErrNoResourceServer, uri)
		}
		return srv, orig, nil
	}
	scheme := schemeOf(uri)
	if srv, ok := rv.schemes[scheme]; ok {
		return srv, uri, nil
	}
	if rv.shared[scheme] {
		return "", "", fmt.Errorf("%w: %q: several servers use %s: URIs; read it as quiver://<server>/%s", ErrNoResourceServer, uri, scheme, uri)
	}
	if len(rv.offering) == 1 {
		return rv.offering[0], uri, nil
	}
	return "", "", fmt.Errorf("%w: no server lists a resource or template for %q", ErrNoResourceServer, uri)
}

// readResource forwards resources/read and maps the contents' URIs back
// to the ones the client knows.
func (m *mirror) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	srv, orig, err := m.resolve(req.Params.URI)
	if err != nil {
		return nil, err
	}
	res, err := passOn(ctx, m.s, srv, opResourceRead, m.resourceArgs(srv, orig), req.Params.Meta, fmt.Sprintf("read %q from server %s", orig, srv),
		func(ctx context.Context, c *client.Client, meta *mcp.Meta) (*mcp.ReadResourceResult, error) {
			out := mcp.ReadResourceRequest{}
			out.Params.URI = orig
			out.Params.Meta = meta
			return c.ReadResource(ctx, out)
		})
	if err != nil {
		return nil, err
	}
	contents := make([]mcp.ResourceContents, 0, len(res.Contents))
	for _, c := range res.Contents {
		switch x := c.(type) {
		case mcp.TextResourceContents:
			x.URI = m.exposeURI(srv, x.URI)
			c = x
		case mcp.BlobResourceContents:
			x.URI = m.exposeURI(srv, x.URI)
			c = x
		}
		contents = append(contents, c)
	}
	redacted, ok := redactJSON(contents, m.s.redactor(), func(b json.RawMessage) ([]mcp.ResourceContents, error) {
		var items []map[string]any
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, err
		}
		out := make([]mcp.ResourceContents, 0, len(items))
		for _, it := range items {
			rc, err := mcp.ParseResourceContents(it)
			if err != nil {
				return nil, err
			}
			out = append(out, rc)
		}
		return out, nil
	})
	if !ok {
		return nil, fmt.Errorf("read %q from server %s: the contents could not be checked for secrets, so they are not shown", orig, srv)
	}
	return redacted, nil
}

// passOn forwards one request of the session in ctx to srv, for a
// resource read or a prompt: judged first as op with args (enter, which
// may ask), sent as a flight of the session (relay.begin: the server's
// progress and its own requests find their way back; send gets the meta
// to forward), and recorded when it ends. what names the request in an
// error.
func passOn[T any](ctx context.Context, s *Server, srv, op string, args map[string]any, meta *mcp.Meta, what string,
	send func(context.Context, *client.Client, *mcp.Meta) (T, error)) (T, error) {
	var res T
	ctx, observed := s.observePass(ctx, srv, op, meta)
	done, err := s.enter(ctx, srv, op, args, true)
	if err != nil {
		observed(err)
		return res, err
	}
	fctx, meta, end := s.relay.begin(ctx, srv, meta)
	defer end()
	fctx, meta, called := s.observeDownstream(fctx, srv, op, meta)
	err = s.reg.Do(fctx, srv, func(ctx context.Context, c *client.Client) (err error) {
		res, err = send(ctx, c, meta)
		return err
	})
	called(failureCode(err))
	done(err)
	observed(err)
	if err != nil {
		var zero T
		return zero, s.redactErr(fmt.Errorf("%s: %w", what, err))
	}
	return res, nil
}

// listResources and listTemplates are mcp-go's after-list hooks: they add
// the downstream lists to whatever quiver itself registered.
func (m *mirror) listResources(_ context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	res.Resources = append(res.Resources, m.res.Load().resources...)
}

func (m *mirror) listTemplates(_ context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	out := res.ResourceTemplates[:0:0]
	for _, t := range res.ResourceTemplates {
		if templateRaw(t) != catchAll {
			out = append(out, t)
		}
	}
	res.ResourceTemplates = append(out, m.res.Load().templates...)
}

// subscriptionHook handles resources/subscribe and resources/unsubscribe
// before mcp-go does (mcp-go only acknowledges them): quiver subscribes
// downstream on a URI's first subscriber and unsubscribes on its last. A
// URI no server offers, or a server that refuses, rejects the request.
func (m *mirror) subscriptionHook(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	if !bytes.Contains(raw, []byte("subscribe")) && bytes.IndexByte(raw, '\\') < 0 {
		// Every request passes here: one with no escape in it names its
		// method as written, so one without the word is no subscription,
		// and need not be decoded a second time.
		return nil
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &msg) != nil {
		return nil
	}
	on := msg.Method == string(mcp.MethodResourcesSubscribe)
	if !on && msg.Method != string(mcp.MethodResourcesUnsubscribe) {
		return nil
	}
	uri := msg.Params.URI
	if uri == "" {
		return nil // mcp-go answers "uri is required"
	}
	srv, orig, err := m.resolve(uri)
	if err != nil {
		return err
	}
	if on {
		// A subscription reads the resource at every change: it is
		// judged like a read, but never asks (the answer would come
		// long after the request that needed it).
		done, err := m.s.enter(ctx, srv, opSubscribe, m.resourceArgs(srv, orig), false)
		if err != nil {
			return err
		}
		done(nil)
	}
	sid := sessionID(ctx)
	if !m.s.relay.subscribe(sid, uri, on) {
		return nil
	}
	if err := m.forwardSubscribe(ctx, uri, on); err != nil {
		if on {
			m.s.relay.subscribe(sid, uri, false)
			return err
		}
		m.s.log.Debug("unsubscribe downstream failed", "uri", uri, "err", err)
	}
	return nil
}

// forwardSubscribe subscribes (or unsubscribes) quiver itself downstream.
func (m *mirror) forwardSubscribe(ctx context.Context, uri string, on bool) error {
	srv, orig, err := m.resolve(uri)
	if err != nil {
		return err
	}
	return m.s.reg.Do(ctx, srv, func(ctx context.Context, c *client.Client) error {
		if r := c.GetServerCapabilities().Resources; r == nil || !r.Subscribe {
			if on {
				return fmt.Errorf("server %s does not support resource subscriptions", srv)
			}
			return nil
		}
		if on {
			req := mcp.SubscribeRequest{}
			req.Params.URI = orig
			//lint:ignore SA1019 quiver relays subscriptions for hosts and servers on versions that have them
			return c.Subscribe(ctx, req)
		}
		req := mcp.UnsubscribeRequest{}
		req.Params.URI = orig
		//lint:ignore SA1019 quiver relays subscriptions for hosts and servers on versions that have them
		return c.Unsubscribe(ctx, req)
	})
}

// resubscribe renews, after srv restarted, the subscriptions quiver holds.
// A renewal is a request that reaches the server like any other, so it
// comes in through the entrance: judged by the gate as it stands now
// (switches, activities, the fence), without a session's grants, and
// recorded (red team 3: a server switched off after the subscribe got it
// again when it restarted).
func (m *mirror) resubscribe(srv string) {
	for _, uri := range m.s.relay.subscribed() {
		owner, orig, err := m.resolve(uri)
		if err != nil || owner != srv {
			continue
		}
		ctx := context.Background()
		done, err := m.s.enter(ctx, srv, opSubscribe, m.resourceArgs(srv, orig), false)
		if err != nil {
			m.s.log.Warn("subscription not renewed: the gate refuses it now", "server", srv, "uri", uri, "err", err)
			continue
		}
		err = m.forwardSubscribe(ctx, uri, true)
		done(err)
		if err != nil {
			m.s.log.Warn("resubscribe failed", "server", srv, "uri", uri, "err", err)
		}
	}
}

// completion forwards completion/complete for downstream prompts and
// resource templates; quiver's own prompts complete to nothing.
type completion struct{ m *mirror }

func (c completion) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	ref, ok := c.m.promptOwner(name)
	if !ok {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return c.forward(ctx, ref.server, mcp.PromptReference{Type: "ref/prompt", Name: ref.name}, nil, arg, cc)
}

func (c completion) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	srv, orig, err := c.m.resolve(uri)
	if err != nil {
		return nil, err
	}
	return c.forward(ctx, srv, mcp.ResourceReference{Type: "ref/resource", URI: orig}, c.m.resourceArgs(srv, orig), arg, cc)
}

// forward asks srv to complete arg. The gate sees the value being typed,
// the other arguments already given and, for a template, its URI: a
// completion lists what is there, so a folder outside the fence is not
// listed. A refused completion is an empty one, not an error: the host
// asks at every keystroke, and the ledger has the refusal.
func (c completion) forward(ctx context.Context, srv string, ref any, args map[string]any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if args == nil {
		args = map[string]any{}
	}
	for k, v := range cc.Arguments {
		args[k] = v
	}
	args[arg.Name] = arg.Value
	done, err := c.m.s.enter(ctx, srv, opComplete, args, false)
	if errors.Is(err, errRefused) {
		return &mcp.Completion{Values: []string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var out *mcp.Completion
	defer func() { done(err) }()
	err = c.m.s.reg.Do(ctx, srv, func(ctx context.Context, cl *client.Client) error {
		if cl.GetServerCapabilities().Completions == nil {
			out = &mcp.Completion{Values: []string{}}
			return nil
		}
		req := mcp.CompleteRequest{}
		req.Params.Ref = ref
		req.Params.Argument = arg
		req.Params.Context = cc
		res, err := cl.Complete(ctx, req)
		if err != nil {
			return err
		}
		out = &res.Completion
		return nil
	})
	if err != nil {
		return nil, c.m.s.redactErr(fmt.Errorf("completion from server %s: %w", srv, err))
	}
	if n := len(out.Values); n > maxCompletionValues {
		// The specification's most (a server sent 40,000, issue 22).
		out.Values, out.HasMore, out.Total = out.Values[:maxCompletionValues], true, max(out.Total, n)
	}
	redact := c.m.s.redactor()
	for i, v := range out.Values {
		out.Values[i] = redact(v)
	}
	return out, nil
}

var _ server.PromptCompletionProvider = completion{}
var _ server.ResourceCompletionProvider = completion{}
