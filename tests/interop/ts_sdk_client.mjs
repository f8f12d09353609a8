// Drives `mcp serve everything` with the official TypeScript SDK client.
//
// Usage: node ts_sdk_client.mjs stdio PATH_TO_MCP_BINARY
//        node ts_sdk_client.mjs http  URL        (Streamable HTTP)
//        node ts_sdk_client.mjs sse   URL        (legacy HTTP+SSE)
// Resolves the SDK from NODE_PATH. Exits non-zero with the failed check.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import {
  ElicitRequestSchema,
  CreateMessageRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [mode, target] = process.argv.slice(2);

function check(condition, what) {
  if (!condition) {
    console.error(`FAILED (${mode}): ${what}`);
    process.exit(1);
  }
  console.log(`ok (${mode}): ${what}`);
}

function transport() {
  switch (mode) {
    case "stdio":
      return new StdioClientTransport({ command: target, args: ["serve", "everything"] });
    case "http":
      return new StreamableHTTPClientTransport(new URL(target));
    case "sse":
      return new SSEClientTransport(new URL(target));
    default:
      console.error(`unknown mode ${mode}`);
      process.exit(2);
  }
}

const client = new Client(
  { name: "ts-sdk-interop", version: "1.0.0" },
  { capabilities: { elicitation: {}, sampling: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: "accept",
  content: { username: "ada", email: "ada@example.com" },
}));
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: "assistant",
  content: { type: "text", text: "Paris" },
  model: "interop-model",
  stopReason: "endTurn",
}));

const watchdog = setTimeout(() => {
  console.error(`FAILED (${mode}): no answer within 30 s`);
  process.exit(1);
}, 30_000);

await client.connect(transport());
check(client.getServerVersion()?.name === "mcp-everything", "initialize names the server");

const tools = await client.listTools();
const names = tools.tools.map((t) => t.name);
check(names.includes("echo") && names.includes("add"), "tools/list has echo and add");

const echo = await client.callTool({ name: "echo", arguments: { text: `hello over ${mode}` } });
check(echo.content?.[0]?.text === `hello over ${mode}`, "tools/call echo answers");

const add = await client.callTool({ name: "add", arguments: { a: 2, b: 3.5 } });
check(add.structuredContent?.sum === 5.5, "tools/call add has structured output");

// The server sends 0, 50 and 100 before the result; this SDK may run the
// last progress handler after the result settled the call, so 2 of 3 count.
const progress = [];
const slow = await client.callTool(
  { name: "test_tool_with_progress", arguments: {} },
  undefined,
  { onprogress: (p) => progress.push(p.progress) },
);
check(
  slow.content?.[0]?.text === "Progress test completed" &&
    progress.length >= 2 &&
    progress.every((p, i) => i === 0 || p > progress[i - 1]),
  `progress arrives in order (${progress})`,
);

const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "Who?" } });
check(JSON.stringify(elicited.content).includes("ada"), "elicitation from the server is answered");

const sampled = await client.callTool({ name: "test_sampling", arguments: { prompt: "Capital?" } });
check(JSON.stringify(sampled.content).includes("Paris"), "sampling from the server is answered");

const resource = await client.readResource({ uri: "test://static-text" });
check(resource.contents?.[0]?.text?.includes("static text resource"), "resources/read answers");

const templates = await client.listResourceTemplates();
check(templates.resourceTemplates.length > 0, "resources/templates/list answers");

const prompt = await client.getPrompt({
  name: "test_prompt_with_arguments",
  arguments: { arg1: "one", arg2: "two" },
});
check(prompt.messages.length > 0, "prompts/get answers");

await client.close();
clearTimeout(watchdog);
console.log(`all checks passed (${mode})`);
