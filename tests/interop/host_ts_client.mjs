// Drives `mcp host` (the gateway of .ci/interop-host.sh) with the official
// TypeScript SDK client over Streamable HTTP.
//
// Usage: node host_ts_client.mjs --url URL --fixture FILE --fixture-text TEXT
//                                --repo DIR --commit-message TEXT
//
// Legacy era only: @modelcontextprotocol/sdk 1.32.2 knows the revisions up
// to 2025-11-25 (SUPPORTED_PROTOCOL_VERSIONS) and has no 2026-07-28 mode.
// Resolves the SDK from the node_modules beside this file. Prints `ok: ...`
// per check; exits non-zero with `FAILED: ...` on the first mismatch.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
}
const SAMPLED_TEXT = "Paris, said the typescript sampler";

function check(condition, what, detail) {
  if (!condition) {
    console.error(`FAILED (typescript legacy): ${what}`);
    if (detail !== undefined) console.error(`  got: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok (typescript legacy): ${what}`);
}

function textOf(result) {
  const parts = (result.content ?? []).map((c) => c.text ?? "");
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return parts.join("\n");
}

// Calls a tool; a JSON-RPC error or an isError result fails the check `what`.
async function call(what, name, toolArgs, options) {
  let result;
  try {
    result = await client.callTool({ name, arguments: toolArgs }, undefined, options);
  } catch (e) {
    check(false, `${what}: tools/call ${name} ${JSON.stringify(toolArgs)}: error ${e.code} ${e.message}`);
  }
  if (result.isError) check(false, `${what}: tools/call ${name} ${JSON.stringify(toolArgs)}: isError`, textOf(result));
  return textOf(result);
}

const watchdog = setTimeout(() => {
  console.error("FAILED (typescript legacy): the checks did not finish within 90 s");
  process.exit(1);
}, 90_000);

const client = new Client(
  { name: "host-interop-typescript", version: "1.0.0" },
  { capabilities: { sampling: {} } },
);
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: "assistant",
  content: { type: "text", text: SAMPLED_TEXT },
  model: "interop-model",
  stopReason: "endTurn",
}));

await client.connect(new StreamableHTTPClientTransport(new URL(args.url)));
const server = client.getServerVersion();
check(server?.name === "mcp-host", `initialize names the server (${server?.name} ${server?.version})`, server);

const names = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : undefined);
  names.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);
const expected = [
  "filesystem__read_file",
  "filesystem__read_text_file",
  "memory__create_entities",
  "memory__open_nodes",
  "time__get_current_time",
  "git__git_status",
  "git__git_log",
  "everything__echo",
  "everything__trigger-long-running-operation",
  "everything__trigger-sampling-request",
  "everything-http__echo",
  "everything-http__trigger-sampling-request",
];
const missing = expected.filter((n) => !names.includes(n));
check(missing.length === 0, `tools/list has every server's tools with their prefixes (${names.length} tools)`, { missing, names });

let text = await call("filesystem read", "filesystem__read_text_file", { path: args.fixture });
check(text.includes(args["fixture-text"]), "filesystem__read_text_file reads the fixture file", text);

const entity = "interop-typescript";
const observation = "created by the typescript sdk client";
await call("memory create", "memory__create_entities", {
  entities: [{ name: entity, entityType: "test", observations: [observation] }],
});
text = await call("memory read", "memory__open_nodes", { names: [entity] });
check(text.includes(observation), "memory__create_entities then memory__open_nodes reads the entity back", text);

text = await call("time", "time__get_current_time", { timezone: "Europe/Paris" });
check(text.includes("Europe/Paris") && /\+0[12]:00/.test(text), "time__get_current_time in Europe/Paris", text);

text = await call("git log", "git__git_log", { repo_path: args.repo, max_count: 1 });
check(text.includes(args["commit-message"]), "git__git_log shows the fixture repo's commit", text);
text = await call("git status", "git__git_status", { repo_path: args.repo });
check(text.includes("nothing to commit"), "git__git_status of the fixture repo", text);

for (const prefix of ["everything", "everything-http"]) {
  const message = `hello from typescript via ${prefix}`;
  text = await call(`${prefix} echo`, `${prefix}__echo`, { message });
  check(text.includes(`Echo: ${message}`), `${prefix}__echo answers`, text);
}

const resources = (await client.listResources()).resources.map((r) => r.uri);
const wanted = resources.filter((u) => u.endsWith("architecture.md"));
check(
  wanted.some((u) => u.startsWith("mcp-host:everything/")) && wanted.some((u) => u.startsWith("mcp-host:everything-http/")),
  "resources/list has architecture.md of both everythings, rewritten per server",
  resources,
);
for (const uri of wanted) {
  const read = await client.readResource({ uri });
  const body = read.contents?.[0]?.text ?? "";
  check(body.length > 100 && body.includes("#"), `resources/read ${uri}`, body.slice(0, 200));
}

const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
check(prompts.includes("everything-http__simple-prompt"), "prompts/list has everything-http__simple-prompt", prompts);
const prompt = await client.getPrompt({ name: "everything-http__simple-prompt" });
check(prompt.messages?.[0]?.content?.text, "prompts/get everything-http__simple-prompt", prompt);

for (const prefix of ["everything", "everything-http"]) {
  const progress = [];
  text = await call(
    `${prefix} progress`,
    `${prefix}__trigger-long-running-operation`,
    { duration: 1, steps: 3 },
    { onprogress: (p) => progress.push(p.progress) },
  );
  check(text.includes("completed"), `${prefix}__trigger-long-running-operation completes`, text);
  // The SDK may run the last progress handler after the result settled the
  // call, so one of three is enough.
  check(progress.length >= 1, `progress notifications cross the host from ${prefix} (${progress})`, progress);
}

for (const prefix of ["everything", "everything-http"]) {
  text = await call(`${prefix} sampling`, `${prefix}__trigger-sampling-request`, {
    prompt: "Capital of France?",
    maxTokens: 20,
  });
  check(text.includes(SAMPLED_TEXT), `sampling/createMessage from ${prefix} reaches this client and its answer goes back`, text);
}

await client.close();
clearTimeout(watchdog);
console.log("typescript sdk client (legacy): all checks passed");
