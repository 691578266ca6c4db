package gate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/quiver-mcp/quiver/gate"
)

func ExampleGate_Evaluate() {
	g, err := gate.New(gate.Policy{
		AllowedDirs: []string{"/srv/quiver-example/work"},
		Rules: []gate.Rule{{
			Tool: "github__*", Args: map[string]gate.Match{"repo": {Equals: "acme/prod"}},
			Action: "deny", Reason: "The prod repository is read-only for agents.",
		}},
	})
	if err != nil {
		panic(err)
	}
	read := &gate.Tool{Name: "fs__read_file", Hints: gate.Hints{ReadOnly: new(true)}}
	for _, c := range []gate.Call{
		{Session: "s", Name: read.Name, Tool: read, Visible: true, Args: json.RawMessage(`{"path":"/srv/quiver-example/work/notes.md"}`)},
		{Session: "s", Name: read.Name, Tool: read, Visible: true, Args: json.RawMessage(`{"path":"/srv/quiver-example/work/../secrets"}`)},
		{Session: "s", Name: "github__merge", Tool: &gate.Tool{Name: "github__merge"}, Visible: true, Args: json.RawMessage(`{"repo":"acme/prod"}`)},
	} {
		d := g.Evaluate(context.Background(), c)
		fmt.Println(d.Verdict, d.Code, d.Paths)
	}
	// Output:
	// allow allow.policy []
	// ask ask.read_outside_fence [/srv/quiver-example/secrets]
	// deny deny.rule []
}
