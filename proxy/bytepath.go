package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
)

// The byte path. Most tool results need nothing of quiver but the exit's
// redaction: they fit the bound, so nothing is cut, and nothing is checked
// against a schema (bound checks one only when it cuts). Decoding such a
// result into mcp-go's structs and encoding it again cost more than every
// other step of forwarding it. So a result that fits goes to the host as
// the downstream's own bytes: the handler returns a stand-in that carries
// them (mcp-go's server wants a *mcp.CallToolResult), and the exit, which
// sees every outgoing message as bytes, puts them in the stand-in's place
// before it redacts and bounds the message as it does every other. A
// result that must be cut, or that mcp-go would not have accepted, takes
// the struct path (bound) as before.

// forwarded is a downstream's tools/call result as it came back.
type forwarded struct {
	raw json.RawMessage
	// asBytes is set when the response will leave through the exit to a
	// host on a version before 2026-07-28 (mayHoldBytes): only then can a
	// stand-in be replaced.
	asBytes bool
}

// exitKey marks a request whose response leaves through the exit.
type exitKey struct{}

// throughExit marks ctx as that of requests whose responses leave through
// the exit (stdio's lineExit, httpExit): an in-process client, for one,
// has no exit, and would be handed the stand-in itself.
func throughExit(ctx context.Context) context.Context {
	return context.WithValue(ctx, exitKey{}, true)
}

// mayHoldBytes reports whether a result of the request in ctx may go to
// the host as bytes: its response leaves through the exit, and mcp-go will
// not decorate it (a host on 2026-07-28 has resultType and the server's
// name added to every result, which the stand-in could not take).
func mayHoldBytes(ctx context.Context) bool {
	through, _ := ctx.Value(exitKey{}).(bool)
	return through && !modernHost(ctx)
}

// shown is the result the host is shown for a downstream's: its own bytes
// when they fit and mcp-go would accept them, else decoded, redacted and
// bounded (bound). A result that cannot be decoded is an error, as it was
// when mcp-go's client decoded every result.
func (v reqView) shown(name string, out forwarded) (*mcp.CallToolResult, error) {
	limit := v.cfg.Surface.MaxResultBytes
	if out.asBytes {
		if res, ok := heldBytes(out.raw, limit); ok {
			return res, nil
		}
	}
	res, err := mcp.ParseCallToolResult(&out.raw)
	if err != nil {
		return nil, err
	}
	t, _ := v.cat.Lookup(name)
	return bound(res, limit, v.redacted, t.OutputSchema), nil
}

// rawKey is the stand-in's mark, in its _meta, with rawMark as its value.
const rawKey = "quiver/raw"

// rawMark tells the exit a stand-in from anything a downstream could send:
// it is drawn once per process and never leaves it.
var rawMark = newRunID() + newRunID()

// A stand-in begins, in a JSON-RPC response as mcp-go encodes it (a map's
// keys sorted: _meta, content, isError, structuredContent), with
// rawBefore, rawMark and rawAfter, from the result's key on.
var (
	rawBefore = []byte(`"result":{"_meta":{"` + rawKey + `":"`)
	rawAfter  = []byte(`"},"content":[],`)
)

// heldBytes returns the stand-in for raw, a downstream's tools/call result,
// when raw may go to the host as it is: it fits limit, and it has the
// shape mcp-go's client would have decoded without complaint, in the
// common kinds of content (text, images, audio) only, and no two texts in
// a row (a secret split across them is redacted by bound, not the exit).
// The stand-in carries raw as its RawStructuredContent, which mcp-go encodes as the bytes they
// are (compacted, with <, > and & escaped, as mcp-go encodes any result);
// its IsError is the result's, for the ledger.
func heldBytes(raw json.RawMessage, limit int) (*mcp.CallToolResult, bool) {
	if limit > 0 && len(raw) > limit {
		return nil, false
	}
	var r resultShape
	if json.Unmarshal(raw, &r) != nil || r.Content == nil || r.ResultType != "" || r.InputRequests != nil || r.RequestState != nil {
		return nil, false
	}
	for i, c := range *r.Content {
		switch c.Type {
		case mcp.ContentTypeText:
			// Adjacent texts read as one (redactAcross): the exit's
			// redaction of the bytes sees them apart.
			if i > 0 && (*r.Content)[i-1].Type == mcp.ContentTypeText {
				return nil, false
			}
		case mcp.ContentTypeImage, mcp.ContentTypeAudio:
		default:
			return nil, false
		}
	}
	return &mcp.CallToolResult{
		Result:               mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{rawKey: rawMark}}},
		RawStructuredContent: raw,
		IsError:              r.IsError,
	}, true
}

// resultShape is what heldBytes reads of a result: every field mcp-go's
// CallToolResult decodes, typed as it types them, so that a result it
// would refuse is refused here too, without copying the text.
type resultShape struct {
	Meta          *mcp.Meta       `json:"_meta"`
	ResultType    string          `json:"resultType"`
	Content       *[]contentShape `json:"content"`
	IsError       bool            `json:"isError"`
	InputRequests json.RawMessage `json:"inputRequests"`
	RequestState  json.RawMessage `json:"requestState"`
}

type contentShape struct {
	Type        string           `json:"type"`
	Text        jsonString       `json:"text"`
	Data        jsonString       `json:"data"`
	MIMEType    jsonString       `json:"mimeType"`
	Annotations *mcp.Annotations `json:"annotations"`
	Meta        *mcp.Meta        `json:"_meta"`
}

// jsonString accepts what a string field accepts (a string, null) without
// decoding it.
type jsonString struct{}

var errNotString = errors.New("not a string")

func (*jsonString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' || string(b) == "null" {
		return nil
	}
	return errNotString
}

// spliced returns msg with a stand-in's result replaced by the bytes it
// carries, or msg as it is when it holds none. mcp-go encodes the
// response's result last, and the stand-in's bytes last in the result, so
// the bytes are what lies between rawHead's fields and the two closing
// braces.
func spliced(msg []byte) []byte {
	// Every message passes here: the mark alone is short enough for
	// bytes.Index's vector search (a pattern over 64 bytes is not).
	j := bytes.Index(msg, []byte(rawMark))
	if j < 0 {
		return msg
	}
	i := j - len(rawBefore)
	if i < 0 || !bytes.Equal(msg[i:j], rawBefore) || !bytes.HasPrefix(msg[j+len(rawMark):], rawAfter) {
		return splicedSlowly(msg)
	}
	rest := msg[j+len(rawMark)+len(rawAfter):]
	rest, _ = bytes.CutPrefix(rest, []byte(`"isError":true,`))
	raw, ok := bytes.CutPrefix(rest, []byte(`"structuredContent":`))
	if !ok || !bytes.HasSuffix(raw, []byte("}}")) {
		return splicedSlowly(msg)
	}
	raw = raw[:len(raw)-2]
	out := make([]byte, 0, i+len(`"result":`)+len(raw)+1)
	out = append(out, msg[:i+len(`"result":`)]...)
	out = append(out, raw...)
	return append(out, '}')
}

// splicedSlowly does what spliced does for a message of a shape it did not
// expect (nothing quiver sends today), by decoding it: a stand-in must
// never reach the host.
func splicedSlowly(msg []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	var res struct {
		Meta map[string]any  `json:"_meta"`
		Raw  json.RawMessage `json:"structuredContent"`
	}
	if json.Unmarshal(m["result"], &res) != nil || res.Meta[rawKey] != rawMark || res.Raw == nil {
		return msg
	}
	m["result"] = res.Raw
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}
