package proxy

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// stepLog is an Observer that writes each step down as it ends, indented
// under the step it began within.
type stepLog struct {
	mu    sync.Mutex
	lines []string
}

type depthKey struct{}

func (l *stepLog) Step(ctx context.Context, s Step) (context.Context, func(string)) {
	depth, _ := ctx.Value(depthKey{}).(int)
	return context.WithValue(ctx, depthKey{}, depth+1), func(code string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, fmt.Sprintf("%s%s %s %s %s", strings.Repeat("  ", depth), s.Kind, s.Method, s.Server, code))
	}
}

func (l *stepLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := strings.Join(l.lines, "\n")
	l.lines = nil
	return out
}

// TestObserverSeesPassThrough: a resource read and a prompt are requests
// with a gate step and a downstream step, each ending with its code; a
// subscription, admitted by the same gate, is no request of the host's
// and leaves no step.
func TestObserverSeesPassThrough(t *testing.T) {
	yaml := fmt.Sprintf("surface: {reveal: direct}\nservers:\n  leaky:\n    command: %q\n    env: {%s: leaky, TOKEN: t}\n", os.Args[0], childEnv)
	cfg, err := registry.ParseConfig("servers.yaml", []byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	obs := &stepLog{}
	s, err := New(cfg, Options{StateDir: t.TempDir(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	t.Cleanup(func() { s.Close() })
	<-s.Ready()
	c := connectInProcess(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "leak://token"}}); err != nil {
		t.Fatal(err)
	}
	want := "  gate  leaky allow.policy\n  downstream  leaky \nrequest resources/read leaky allow.policy"
	if got := obs.take(); got != want {
		t.Errorf("resources/read steps:\n%s\nwant:\n%s", got, want)
	}
	if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "leaky__fail"}}); err == nil {
		t.Fatal("the failing prompt did not fail")
	}
	want = "  gate  leaky allow.policy\n  downstream  leaky error.downstream\nrequest prompts/get leaky error.downstream"
	if got := obs.take(); got != want {
		t.Errorf("a failing prompts/get's steps:\n%s\nwant:\n%s", got, want)
	}
	//lint:ignore SA1019 quiver still takes resources/subscribe from hosts on 2025-11-25, and admits it through the gate
	_ = c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "leak://token"}})
	if got := obs.take(); got != "" {
		t.Errorf("a subscription left steps:\n%s", got)
	}
}
