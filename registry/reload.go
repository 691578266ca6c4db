package registry

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// life is a conn's place in the registry: how to stop it and how to know
// it has stopped. launch sets it; Apply uses it.
type life struct {
	cancel    context.CancelFunc
	done      chan struct{} // closed when supervise has returned (child reaped)
	tried     chan struct{} // closed after the first attempt to start
	stopWhy   atomic.Pointer[string]
	timeoutNs atomic.Int64 // the entry's call timeout; changes without a restart
	inflight  atomic.Int32 // calls being forwarded
}

// newConn prepares the conn for s, an entry of a configuration whose
// secrets are given: until that configuration is in force (Apply starts
// servers before it swaps), they are the ones that name s's own.
func (r *Registry) newConn(s Server, secrets []Secret) *conn {
	c := &conn{reg: r, srv: s, secrets: secrets, status: ServerStatus{Name: s.Name, Transport: s.Transport, State: StateStarting, Since: time.Now()}}
	c.timeoutNs.Store(int64(s.Timeout))
	c.done = make(chan struct{})
	c.tried = make(chan struct{})
	return c
}

// timeout is the per-call deadline the entry in force asks for.
func (c *conn) timeout() time.Duration { return time.Duration(c.timeoutNs.Load()) }

// launch runs c's supervisor under ctx; first is called once after its
// first attempt to start, successful or not.
func (r *Registry) launch(ctx context.Context, c *conn, first func()) {
	ctx, c.cancel = context.WithCancel(ctx)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(c.done)
		c.supervise(ctx, func() {
			close(c.tried)
			if first != nil {
				first()
			}
		})
	}()
}

// stop ends c for the reason given (which in-flight and later calls
// report) and waits until its child and process group are reaped.
func (c *conn) stop(why string) {
	c.stopWhy.Store(&why)
	if c.cancel != nil {
		c.cancel()
		<-c.done
	}
}

// config is the configuration in force.
func (r *Registry) config() *Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// Config returns the configuration in force: the one New was given, or the
// last one Apply accepted.
func (r *Registry) Config() *Config { return r.config() }

func (r *Registry) connFor(server string) *conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.IndexFunc(r.conns, func(c *conn) bool { return c.srv.Name == server }); i >= 0 {
		return r.conns[i]
	}
	return nil
}

// A Change says what Apply did to each server, by name.
type Change struct {
	Added     []string // started
	Removed   []string // stopped and reaped
	Restarted []string // how to reach it changed: stopped, then started anew
	Updated   []string // prefix, keywords, timeout, tools_default, path_args or path_base changed: same process
}

// Empty reports whether no server was touched.
func (c Change) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Restarted)+len(c.Updated) == 0
}

// ErrNotStarted is returned by Apply before Start or after Close.
var ErrNotStarted = errors.New("registry is not running")

// Apply makes cfg the configuration in force, touching as little as it can.
// A server added is started; one removed is stopped (its calls in flight end
// with ErrServerDown saying so, its process group is reaped); one whose
// launch (command, args, env, env_passthrough, cwd, url, transport,
// headers) changed is
// stopped and started anew; one whose other settings changed keeps its
// process; the rest are untouched. Surface settings and toggles take effect
// in the catalog.
//
// Whatever Apply does comes out as one catalog: it waits (at most
// Options.ApplyWait, or until ctx ends) for the servers it starts to make
// their first attempt, publishes, and returns once OnChange has seen that
// catalog. cfg must be valid (ParseConfig); Apply never half-applies it.
func (r *Registry) Apply(ctx context.Context, cfg *Config) (Change, error) {
	r.applyMu.Lock()
	locked := true
	defer func() {
		if locked {
			r.applyMu.Unlock()
		}
	}()
	var ch Change
	if r.ctx == nil || r.ctx.Err() != nil {
		return ch, ErrNotStarted
	}
	r.mu.Lock()
	old := slices.Clone(r.conns)
	r.mu.Unlock()
	byName := map[string]*conn{}
	for _, c := range old {
		byName[c.srv.Name] = c
	}
	var next, starting, stopping []*conn
	why := map[*conn]string{}
	for _, s := range cfg.Servers {
		c, ok := byName[s.Name]
		delete(byName, s.Name)
		switch {
		case !ok:
			ch.Added = append(ch.Added, s.Name)
		case sameLaunch(c.srv, s):
			if !sameServer(c.srv, s) {
				ch.Updated = append(ch.Updated, s.Name)
			}
			c.timeoutNs.Store(int64(s.Timeout))
			next = append(next, c)
			continue
		default:
			ch.Restarted = append(ch.Restarted, s.Name)
			stopping = append(stopping, c)
			why[c] = "was restarted for a configuration change"
		}
		nc := r.newConn(s, cfg.Secrets)
		next = append(next, nc)
		starting = append(starting, nc)
	}
	for _, c := range old {
		if _, gone := byName[c.srv.Name]; gone {
			ch.Removed = append(ch.Removed, c.srv.Name)
			stopping = append(stopping, c)
			why[c] = "was removed from the configuration"
		}
	}

	// Break before make: a server that holds a lock or a port must be gone
	// before its successor starts.
	var wg sync.WaitGroup
	for _, c := range stopping {
		wg.Go(func() { c.stop(why[c]) })
	}
	wg.Wait()
	for _, c := range starting {
		r.launch(r.ctx, c, r.changed)
	}
	wait := time.NewTimer(r.opts.ApplyWait)
	defer wait.Stop()
first:
	for _, c := range starting {
		select {
		case <-c.tried:
		case <-wait.C:
			r.log.Warn("reload: a server is slow to start; publishing without it", "server", c.srv.Name)
			break first
		case <-ctx.Done():
			break first
		}
	}

	r.mu.Lock()
	r.cfg = cfg
	r.conns = next
	target := r.gen // every catalog built from here on has what Apply did
	r.mu.Unlock()
	r.changed()
	r.applyMu.Unlock()
	locked = false
	for _, name := range ch.Added {
		r.log.Info("reload: server added", "server", name)
	}
	for _, name := range ch.Removed {
		r.log.Info("reload: server removed", "server", name)
	}
	for _, name := range ch.Restarted {
		r.log.Info("reload: server restarted (its entry changed)", "server", name)
	}
	for _, name := range ch.Updated {
		r.log.Info("reload: server settings updated (same process)", "server", name)
	}
	return ch, r.waitPublished(ctx, target)
}

// waitPublished waits until OnChange has seen a catalog newer than gen.
func (r *Registry) waitPublished(ctx context.Context, gen uint64) error {
	for {
		r.mu.Lock()
		done, ch := r.pubGen > gen, r.pubWait
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-r.ctx.Done():
			return ErrNotStarted
		}
	}
}

// sameLaunch reports whether two entries reach the server the same way, so
// that the running process can stay.
func sameLaunch(a, b Server) bool {
	return a.Unavailable == b.Unavailable && a.Command == b.Command && slices.Equal(a.Args, b.Args) && maps.Equal(a.Env, b.Env) &&
		a.Cwd == b.Cwd && slices.Equal(a.EnvPassthrough, b.EnvPassthrough) && a.URL == b.URL && a.Transport == b.Transport && maps.Equal(a.Headers, b.Headers)
}

// sameServer reports whether nothing but the entry's position changed.
func sameServer(a, b Server) bool {
	return sameLaunch(a, b) && a.Prefix == b.Prefix && slices.Equal(a.Keywords, b.Keywords) &&
		a.Timeout == b.Timeout && a.ToolsOff == b.ToolsOff && pathArgsEqual(a.PathArgs, b.PathArgs) &&
		a.PathBase == b.PathBase && a.Pinning == b.Pinning
}

func pathArgsEqual(a, b map[string][]string) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// configName is how messages name the config file.
func configName(path string) string {
	if path == "" {
		return "servers.yaml"
	}
	return filepath.Base(path)
}
