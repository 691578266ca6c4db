// driver.mjs plays an MCP host with the published TypeScript client
// (@modelcontextprotocol/client, pinned by the Go tests) so that the tests
// can see what a real host sees through quiver.
//
// It reads one JSON script on stdin:
//
//   {
//     "transport": "stdio" | "http",
//     "command": "...", "args": [...], "env": {...},   // stdio
//     "url": "http://127.0.0.1:P/mcp", "headers": {...}, // http
//     "negotiation": "legacy" | "auto" | "2026-07-28", // a version pins it
//     "capabilities": {...},                          // default: elicitation, sampling, roots
//     "trace": true,                                  // print every message as "wire"
//     "steps": [
//       {"op": "listTools", "until": ["name", ...], "timeoutMs": 15000},
//       {"op": "callTool", "name": "...", "arguments": {...},
//        "elicit": [{"match": "substring", "action": "accept", "content": {...}}, ...],
//        "sample": [{"text": "..."}]}
//     ]
//   }
//
// and prints one JSON object a line on stdout: "connected" (era and
// version), "elicitation" and "sampling" (what the handler was asked and
// what it answered, with the step it happened in), "roots", "tools",
// "result" or "error" for each step, "wire" when tracing, and "done". An elicitation no
// scripted answer matches is declined and marked unscripted.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const script = await readStdin();
const negotiation = script.negotiation ?? 'legacy';
const mode = negotiation === 'legacy' || negotiation === 'auto' ? negotiation : { pin: negotiation };

const client = new Client({ name: 'quiver-e2e-ts', version: '1' }, {
  capabilities: script.capabilities ?? {
    elicitation: { form: {} },
    sampling: {},
    roots: { listChanged: true },
  },
  versionNegotiation: { mode },
});

// The step being run, and the answers it scripted.
let step = -1;
let elicit = [];
let sample = [];

client.setRequestHandler('elicitation/create', async (req) => {
  const p = req.params ?? {};
  const i = elicit.findIndex((a) => !a.used && (!a.match || String(p.message ?? '').includes(a.match)));
  let answer = { action: 'decline' };
  if (i >= 0) {
    elicit[i].used = true;
    answer = { action: elicit[i].action };
    if (elicit[i].content !== undefined) answer.content = elicit[i].content;
  }
  emit({ event: 'elicitation', step, message: p.message, schema: p.requestedSchema, answer, unscripted: i < 0 });
  return answer;
});

client.setRequestHandler('sampling/createMessage', async (req) => {
  const a = sample.shift() ?? {};
  const text = a.text ?? 'sampled by the host';
  emit({ event: 'sampling', step, messages: req.params?.messages, answer: text });
  return { model: 'test-model', role: 'assistant', content: { type: 'text', text }, stopReason: 'endTurn' };
});

client.setRequestHandler('roots/list', async () => {
  emit({ event: 'roots', step });
  return { roots: script.roots ?? [] };
});

const transport = script.transport === 'http'
  ? new StreamableHTTPClientTransport(new URL(script.url), { requestInit: { headers: script.headers ?? {} } })
  : new StdioClientTransport({ command: script.command, args: script.args ?? [], env: script.env, stderr: 'inherit' });

// With "trace": true every JSON-RPC message the host sends or receives is
// printed as a "wire" event, so a test can see the rounds of an input
// request that the client fulfils by itself.
if (script.trace) {
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    emit({ event: 'wire', step, dir: 'out', msg });
    return send(msg, opts);
  };
  // The client reads the handler back and sets it again (to chain or
  // restore it); each handler gets one stable wrapper, and a wrapper
  // called from inside another prints nothing, so a message is printed
  // once however the handlers are chained.
  let onmessage;
  let delivering = false;
  const wrapped = new WeakMap();
  const inner = new WeakMap();
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => {
      if (!onmessage) return undefined;
      if (!wrapped.has(onmessage)) {
        const f = onmessage;
        const w = (msg, extra) => {
          if (delivering) return f(msg, extra);
          emit({ event: 'wire', step, dir: 'in', msg });
          delivering = true;
          try {
            return f(msg, extra);
          } finally {
            delivering = false;
          }
        };
        wrapped.set(f, w);
        inner.set(w, f);
      }
      return wrapped.get(onmessage);
    },
    set: (f) => { onmessage = inner.get(f) ?? f; },
  });
}

const errorOf = (e) => ({ message: String(e?.message ?? e), code: e?.code, data: e?.data });

try {
  await client.connect(transport);
} catch (e) {
  emit({ event: 'error', step, op: 'connect', ...errorOf(e) });
  emit({ event: 'done' });
  process.exit(0);
}
emit({ event: 'connected', era: client.getProtocolEra(), version: client.getNegotiatedProtocolVersion() });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const [i, s] of (script.steps ?? []).entries()) {
  step = i;
  elicit = (s.elicit ?? []).map((a) => ({ ...a }));
  sample = [...(s.sample ?? [])];
  try {
    switch (s.op) {
      case 'listTools': {
        const deadline = Date.now() + (s.timeoutMs ?? 15000);
        let names = [];
        for (;;) {
          names = (await client.listTools()).tools.map((t) => t.name);
          if ((s.until ?? []).every((n) => names.includes(n)) || Date.now() > deadline) break;
          await sleep(100);
        }
        emit({ event: 'tools', step, names });
        break;
      }
      case 'callTool': {
        const result = await client.callTool({ name: s.name, arguments: s.arguments ?? {} });
        emit({ event: 'result', step, result });
        break;
      }
      default:
        throw new Error(`unknown op ${s.op}`);
    }
  } catch (e) {
    emit({ event: 'error', step, op: s.op, ...errorOf(e) });
  }
}

await client.close().catch(() => {});
emit({ event: 'done' });
process.exit(0);
