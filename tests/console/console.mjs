// The web console of `mcp host` in a real headless Chromium (playwright-core
// driving Debian's chromium), against a real `mcp host` with our
// everything server and the official memory server (npm) behind it.
//
// It signs in with the admin token, sees the servers, sees a tool whose
// description holds a prompt injection flagged in the catalog, runs a tool from its
// generated form (a nested object and an enum), renders a prompt, reads a
// resource from a template, approves a held call (the memory server then
// holds what it created) and denies another (it does not), finds both in
// the audit, restarts a server and watches its restarts go up live,
// answers a server's question no client can on the approvals page,
// reviews what a server asks the host's model (edits the request, sees
// the reply, gives it to the server; refuses another), sees each call's
// decision and rule,
// shows each server's requests per minute from the audit log, opens a
// server's page (its entry's secret masked), disables a server and
// enables it again,
// cancels a slow tool (the audit says cancelled), finds an earlier call
// in the history and runs it again, sees a call's progress notifications
// there, and sees the console
// refuse a change with a wrong Origin, one without the session cookie and
// one without the CSRF token. With --oauth, alice and bob sign in through
// the host's authorization server: alice sees and runs a tool the policy
// denies bob; bob's catalog leaves it out, his call of it is refused
// naming the rule, the operator's pages are closed to him, and neither
// sees the other's calls. Screenshots of the main views go to $SHOTS.
// Then, with 20 servers of 25 tools each, it measures the catalog page's
// load and first contentful paint (reported, not asserted).
//
// Environment: MCP (the mcp binary), CHROMIUM, NODE_MODULES (with
// playwright-core), MEMORY_SERVER (server-memory's dist/index.js), SHOTS
// (a folder), MANY_TOOLS (bench/peers/many_tools.py).

import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

const env = process.env;
const require = createRequire(join(env.NODE_MODULES, "noop.js"));
const { chromium } = require("playwright-core");

const TOKEN = "console-test-token-" + Math.random().toString(16).slice(2);
const started = [];
const step = (what) => console.log(`console: ${what}`);

/** Starts `mcp host` with `servers`, `settings` (TOML) and `extra` arguments; resolves to its admin URL. */
function startHost(servers, settings, name, extra = []) {
  const dir = mkdtempSync(join(tmpdir(), `console-${name}-`));
  writeFileSync(join(dir, "servers.json"), JSON.stringify({ mcpServers: servers }));
  writeFileSync(
    join(dir, "host.toml"),
    `[admin]\nhttp = "127.0.0.1:0"\ntoken = "${TOKEN}"\n\n[audit]\npath = "${join(dir, "audit.db")}"\n\n${settings}`,
  );
  const host = spawn(
    env.MCP,
    ["host", "--http", "127.0.0.1:0", "--config", join(dir, "servers.json"), "--settings", join(dir, "host.toml"), ...extra],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  started.push(host);
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: no admin address in 60 s:\n${err}`)), 60_000);
    host.stderr.on("data", (chunk) => {
      err += chunk;
      const found = err.match(/admin: (http:\/\/127\.0\.0\.1:\d+)/);
      if (found) {
        clearTimeout(timer);
        resolve({ admin: found[1], dir, log: () => err });
      }
    });
    host.on("exit", (code) => reject(new Error(`${name} exited (${code}):\n${err}`)));
  });
}

/**
 * A stand-in for the host's model on 127.0.0.1, speaking OpenAI's Chat
 * Completions: it answers "echo: " and the last message's text, so what
 * the model was sent shows in what the server gets. Resolves to its base URL.
 */
function startModel() {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const asked = JSON.parse(body);
      const last = asked.messages[asked.messages.length - 1];
      const text = typeof last.content === "string" ? last.content : last.content.map((p) => p.text ?? "").join("");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "c",
          object: "chat.completion",
          model: asked.model,
          choices: [{ index: 0, message: { role: "assistant", content: `echo: ${text}` }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  started.push({ kill: () => server.close() });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${server.address().port}/v1`)));
}

/** Waits until `check()` is true (polling), or fails saying `what`. */
async function until(what, check, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main() {
  mkdirSync(env.SHOTS, { recursive: true });
  const servers = {
    everything: { command: env.MCP, args: ["serve", "everything"] },
    memory: { command: process.execPath, args: [env.MEMORY_SERVER], env: { MEMORY_FILE_PATH: join(tmpdir(), `memory-${process.pid}.jsonl`) } },
    odd: { command: "python3", args: [new URL("./suspicious_server.py", import.meta.url).pathname], env: { ODD_API_TOKEN: "s3cret-value" } },
  };
  const model = await startModel();
  const policy = `[model]\nbase_url = "${model}"\nmodel = "echo"\nretries = 0\n\n[sampling]\napprove = "ask"\n\n[guard]\napprovers = ["console"]\nask_timeout = 60\n\n[[policy]]\ndecision = "ask"\nserver = "memory"\ntool = "create_entities"\n`;
  const { admin } = await startHost(servers, policy, "main");
  const browser = await chromium.launch({ executablePath: env.CHROMIUM, args: ["--no-sandbox"] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();

  step("sign in with the admin token");
  await page.goto(`${admin}/console`);
  assert.match(page.url(), /\/console\/login$/);
  await page.getByLabel("Admin token").fill("not the token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not the admin token" }).waitFor();
  await page.getByLabel("Admin token").fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${admin}/console`);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "mcp_console");
  assert.ok(session && session.httpOnly && session.sameSite === "Strict", JSON.stringify(cookies));

  step("see the servers");
  for (const name of ["everything", "memory", "odd"]) {
    await page.locator(`tr[data-server="${name}"] [data-state="ready"]`).waitFor();
  }
  await page.screenshot({ path: join(env.SHOTS, "servers.png"), fullPage: true });

  step("see a tool flagged for what its description tells the model");
  await page.goto(`${admin}/console/catalog`);
  await page.getByLabel("Search the catalog").fill("notes");
  const flagged = page.locator('[data-list="tools"] tr').filter({ hasText: "odd__notes" });
  await flagged.locator(".badge", { hasText: "suspicious: injection" }).waitFor();
  const plain = page.locator('[data-list="tools"] tbody tr');
  await page.getByLabel("Search the catalog").fill("echo");
  await until("the search for echo", async () => !(await plain.allInnerTexts()).join().includes("odd__notes"));
  assert.ok(!(await plain.allInnerTexts()).join().includes("suspicious"), "an honest tool is not flagged");

  step("run a tool from its form: a nested object and an enum");
  await page.goto(`${admin}/console/catalog`);
  await page.getByLabel("Search the catalog").fill("2020-12");
  await page.locator('a[href*="json_schema_2020_12_tool"]').click();
  await page.getByLabel("name").fill("Ada");
  await page.locator('fieldset[data-path="/address"]').getByLabel("city").fill("London");
  await page.locator('fieldset[data-path="/address"]').getByLabel("street").fill("1 Analytical Row");
  await page.getByLabel("contactMethod").selectOption({ label: "email" });
  await page.getByLabel("email", { exact: true }).fill("ada@example.com");
  await page.getByRole("button", { name: /^Call/ }).click();
  const tool = page.locator(".call").first();
  await tool.locator('[data-state="done"]').waitFor();
  const said = await tool.locator("pre.text").innerText();
  const received = JSON.parse(said.replace(/^Received: /, ""));
  assert.deepEqual(received, {
    name: "Ada",
    address: { city: "London", street: "1 Analytical Row" },
    contactMethod: "email",
    email: "ada@example.com",
  });
  await page.screenshot({ path: join(env.SHOTS, "tool.png"), fullPage: true });

  step("render a prompt with its arguments");
  await page.goto(`${admin}/console/catalog`);
  await page.getByLabel("Search the catalog").fill("test_prompt_with_arguments");
  await page.locator('[data-list="prompts"] li').filter({ hasText: "with_arguments" }).getByRole("link").click();
  const promptInputs = page.locator('form input[type="text"]');
  for (let i = 0; i < (await promptInputs.count()); i++) await promptInputs.nth(i).fill(`value${i}`);
  await page.getByRole("button", { name: "Get the prompt" }).click();
  const prompt = page.locator(".call").first();
  await prompt.locator('[data-state="done"]').waitFor();
  assert.match(await prompt.locator("ol.messages").innerText(), /value0/);

  step("read a resource from a template, its variable completed by the server");
  await page.goto(`${admin}/console/catalog`);
  const templateLink = page.locator('[data-list="templates"] a', { hasText: "{id}" }).first();
  await templateLink.waitFor();
  await templateLink.click();
  const id = page.locator("#v-id");
  await id.fill("1");
  await until("the server's completions", async () => (await page.locator('#dl-id option[value="123"]').count()) === 1);
  await id.fill("123");
  await page.getByRole("button", { name: "Read" }).click();
  const read = page.locator(".call").first();
  await read.locator('[data-state="done"]').waitFor();
  assert.ok((await read.locator("figure.resource figcaption").count()) > 0, await read.innerHTML());
  assert.ok((await read.innerText()).includes("123"), await read.innerText());

  step("read a resource as it is");
  await page.goto(`${admin}/console/catalog`);
  const resourceLink = page.locator('[data-list="resources"] a').first();
  await resourceLink.waitFor();
  await resourceLink.click();
  await page.getByRole("button", { name: "Read" }).click();
  await page.locator('.call [data-state="done"]').first().waitFor();

  step("approve a held call, and deny another");
  const approvals = await context.newPage();
  await approvals.goto(`${admin}/console/approvals`);
  await approvals.locator('[data-queue="empty"]').waitFor();
  async function createEntity(name) {
    await page.goto(`${admin}/console/tool?name=memory__create_entities`);
    await page.getByLabel("entities").fill(JSON.stringify([{ name, entityType: "person", observations: ["seen"] }]));
    await page.getByRole("button", { name: /^Call/ }).click();
    await page.locator(".call [data-state=running]").waitFor();
  }
  await createEntity("alice");
  const held = approvals.locator("article.approval");
  await held.waitFor();
  assert.match(await held.innerText(), /create_entities/);
  await approvals.screenshot({ path: join(env.SHOTS, "approvals.png"), fullPage: true });
  await held.getByRole("button", { name: "Allow once" }).click();
  await page.locator('.call [data-state="done"]').waitFor();
  const approvedDecision = await page.locator('.call [data-decision="ask"]').innerText();
  assert.ok(/ask/.test(approvedDecision) && /once/.test(approvedDecision), approvedDecision);
  await approvals.locator('[data-queue="empty"]').waitFor();
  await createEntity("bob");
  await held.waitFor();
  await held.getByRole("button", { name: "Deny" }).click();
  await page.locator('.call [data-state="error"], .call [data-state="tool-error"]').first().waitFor();
  await page.goto(`${admin}/console/tool?name=memory__read_graph`);
  await page.getByRole("button", { name: /^Call/ }).click();
  await page.locator('.call [data-state="done"]').waitFor();
  const graph = await page.locator(".call").first().innerText();
  assert.match(graph, /alice/, "the approved call reached the server");
  assert.doesNotMatch(graph, /bob/, "the denied call did not");

  step("answer a server's question no client can, on the approvals page");
  await page.goto(`${admin}/console/tool?name=everything__test_elicitation`);
  await page.getByLabel("message").fill("Who is there?");
  await page.getByRole("button", { name: /^Call/ }).click();
  const question = approvals.locator("article[data-question]");
  await question.waitFor();
  assert.ok((await question.innerText()).includes("Who is there?"));
  await question.getByLabel("username").fill("ada");
  await question.getByLabel("email").fill("ada@example.com");
  await question.getByRole("button", { name: "Send" }).click();
  const answered = page.locator('.call [data-state="done"]');
  await answered.waitFor();
  const reply = await page.locator(".call").innerText();
  assert.ok(reply.includes("ada") && reply.includes("ada@example.com"), reply);
  await approvals.locator('[data-queue="empty"]').waitFor();

  step("review what a server asks the host's model: edit it, then give the reply to the server; refuse another");
  async function sample(prompt) {
    await page.goto(`${admin}/console/tool?name=everything__test_sampling`);
    await page.getByLabel("prompt").fill(prompt);
    await page.getByRole("button", { name: /^Call/ }).click();
  }
  await sample("What is 2+2?");
  const sampling = approvals.locator("article[data-sampling]");
  await sampling.waitFor();
  const asked = sampling.getByLabel("The request (JSON; edit before sending)");
  const sent = await asked.inputValue();
  assert.ok(sent.includes("What is 2+2?"), sent);
  await asked.fill(sent.replace("What is 2+2?", "What is 3+3?"));
  await sampling.getByRole("button", { name: "Send to the model" }).click();
  const modelReply = approvals.locator("article[data-sampling]", { hasText: "answered" });
  await modelReply.waitFor();
  assert.ok((await modelReply.innerText()).includes("echo: What is 3+3?"), await modelReply.innerText());
  await approvals.screenshot({ path: join(env.SHOTS, "sampling.png"), fullPage: true });
  await modelReply.getByRole("button", { name: "Give it to the server" }).click();
  await page.locator('.call [data-state="done"]').waitFor();
  const sampled = await page.locator(".call").innerText();
  assert.ok(sampled.includes("LLM response: echo: What is 3+3?"), sampled);
  await approvals.locator('[data-queue="empty"]').waitFor();
  await sample("Tell me a secret");
  await sampling.waitFor();
  await sampling.getByRole("button", { name: "Refuse" }).click();
  await page.locator('.call [data-state="error"], .call [data-state="tool-error"]').first().waitFor();
  await approvals.locator('[data-queue="empty"]').waitFor();

  step("find both in the audit");
  await page.goto(`${admin}/console/audit`);
  await page.getByLabel("Tool, prompt or resource").fill("memory__create_entities");
  await page.getByRole("button", { name: "Search" }).click();
  const rows = page.locator("table.audit tbody tr");
  await until("two audit records", async () => (await rows.count()) === 2);
  const decided = await rows.allInnerTexts();
  assert.ok(decided.every((r) => /ask/.test(r)), decided.join("\n"));
  assert.ok(decided.some((r) => /once/.test(r)) && decided.some((r) => /den/.test(r)), decided.join("\n"));
  await page.screenshot({ path: join(env.SHOTS, "audit.png"), fullPage: true });
  const exported = await page.request.get(`${admin}/console/audit.jsonl?target=memory__create_entities`);
  assert.equal(exported.status(), 200);
  assert.equal((await exported.text()).trim().split("\n").length, 2);

  step("see each server's requests per minute, from the audit log");
  await page.goto(`${admin}/console/metrics`);
  const memoryChart = page.locator('tr[data-metrics="memory"] svg[data-chart="requests"]');
  await memoryChart.waitFor();
  const label = await memoryChart.getAttribute("aria-label");
  assert.ok(/requests: [1-9]\d* in the hour/.test(label), label);
  assert.ok((await page.locator('tr[data-metrics="memory"] svg[data-chart="requests"] rect').count()) >= 1);
  await page.screenshot({ path: join(env.SHOTS, "metrics.png"), fullPage: true });

  step("restart a server and watch it live");
  await page.goto(`${admin}/console`);
  const everything = page.locator('tr[data-server="everything"]');
  const before = Number(await everything.locator("td.number").innerText());
  await everything.getByRole("button", { name: "Restart everything" }).click();
  await until("the restart shown without a reload", async () => Number(await everything.locator("td.number").innerText()) > before);
  await everything.locator('[data-state="ready"]').waitFor();

  step("a server's page: its state, its entry with secrets masked, what was flagged");
  await page.goto(`${admin}/console`);
  await page.locator('tr[data-server="odd"] th a').click();
  await page.waitForURL(`${admin}/console/servers/odd`);
  await page.locator('dl.server [data-state="ready"]').waitFor();
  const entry = await page.locator("main").innerText();
  assert.ok(entry.includes("ODD_API_TOKEN") && entry.includes("***"), entry);
  assert.ok(!entry.includes("s3cret-value"), "the secret is not shown");
  await page.locator('[data-flagged="notes"]').waitFor();
  await page.screenshot({ path: join(env.SHOTS, "server.png"), fullPage: true });
  await page.goto(`${admin}/console`);

  step("disable a server, see it leave, and enable it again");
  await page.locator('tr[data-server="odd"]').getByRole("button", { name: "Disable odd" }).click();
  const disabled = page.locator('li[data-disabled="odd"]');
  await disabled.waitFor();
  assert.equal(await page.locator('tr[data-server="odd"]').count(), 0);
  await disabled.getByRole("button", { name: "Enable odd" }).click();
  await page.locator('tr[data-server="odd"] [data-state="ready"]').waitFor();
  assert.equal(await page.locator('li[data-disabled="odd"]').count(), 0);

  step("cancel a slow tool");
  await page.goto(`${admin}/console/tool?name=everything__test_tool_slow`);
  await page.getByLabel("durationMs").fill("60000");
  await page.getByRole("button", { name: /^Call/ }).click();
  await page.locator(".call [data-state=running]").waitFor();
  await page.locator(".call").getByRole("button", { name: "Cancel" }).click();
  await page.locator('.call [data-state="cancelled"]').waitFor();
  await until("the cancelled call in the audit", async () => {
    const r = await page.request.get(`${admin}/console/audit.jsonl?target=everything__test_tool_slow`);
    return (await r.text()).includes('"outcome":"cancelled"');
  });

  step("find an earlier call in the history, and run it again");
  await page.goto(`${admin}/console/history?q=2020_12`);
  const earlier = page.locator("article[data-history]").first();
  await earlier.waitFor();
  const request = await earlier.locator("details").first().textContent();
  assert.ok(request.includes("Ada") && request.includes("London"), request);
  const earlierDecision = await earlier.locator('[data-decision="allow"]').innerText();
  assert.ok(earlierDecision.includes("the default"), earlierDecision);
  await earlier.getByRole("button", { name: "Run again" }).click();
  await page.locator('#calls .call [data-state="done"]').waitFor();
  await page.screenshot({ path: join(env.SHOTS, "history.png"), fullPage: true });
  await page.goto(`${admin}/console/tool?name=everything__slow_task`);
  await page.locator('input[name="/steps"]').fill("3");
  await page.locator('input[name="/step_ms"]').fill("20");
  await page.getByRole("button", { name: /^Call/ }).click();
  await page.locator('.call [data-state="done"]').waitFor();
  await page.goto(`${admin}/console/history?q=slow_task`);
  const notified = page.locator("article[data-history] details.notifications").first();
  assert.match(await notified.locator("summary").innerText(), /Notifications \(3\)/);
  assert.ok((await notified.textContent()).includes("notifications/progress"));

  step("refuse a wrong Origin, no cookie, and no CSRF token");
  const csrf = JSON.parse(await page.locator("body").getAttribute("hx-headers"))["x-csrf-token"];
  const restart = (headers) =>
    page.request.post(`${admin}/console/servers/restart`, { form: { server: "memory" }, headers, maxRedirects: 0 });
  assert.equal((await restart({ "x-csrf-token": csrf, origin: "http://evil.example" })).status(), 403);
  assert.equal((await restart({})).status(), 403, "without the CSRF token");
  const stranger = await browser.newContext();
  const anonymous = await stranger.request.post(`${admin}/console/servers/restart`, {
    form: { server: "memory" },
    headers: { "x-csrf-token": csrf },
    maxRedirects: 0,
  });
  assert.equal(anonymous.status(), 401, "without the cookie");
  assert.equal((await restart({ "x-csrf-token": csrf })).status(), 204, "with both, the same request is taken");

  step("people sign in through the host's authorization server: each sees and runs what the policy gives them");
  const oauthDb = join(mkdtempSync(join(tmpdir(), "console-oauth-")), "oauth.sqlite");
  const guarded = await startHost(
    { everything: { command: env.MCP, args: ["serve", "everything"] } },
    `[[policy]]\ndecision = "deny"\nserver = "everything"\ntool = "add"\ncaller = "bob"\nname = "bob does not add"\n`,
    "oauth",
    ["--oauth", "--oauth-user", "alice:wonderland", "--oauth-user", "bob:builder", "--oauth-db", oauthDb],
  );
  async function signInAs(user, password) {
    const own = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const at = await own.newPage();
    await at.goto(`${guarded.admin}/console/login`);
    await at.getByRole("link", { name: "Sign in with your account" }).click();
    await at.getByLabel("User name").fill(user);
    await at.getByLabel("Password").fill(password);
    await at.getByRole("button", { name: "Allow" }).click();
    await at.waitForURL(`${guarded.admin}/console/catalog`);
    assert.ok((await at.locator("nav .who").innerText()).includes(user));
    return at;
  }
  const addLink = (at) => at.locator('[data-list="tools"] a', { hasText: /^everything__add$/ });
  const alice = await signInAs("alice", "wonderland");
  await addLink(alice).waitFor();
  await alice.goto(`${guarded.admin}/console/tool?name=everything__add`);
  await alice.locator('input[name="/a"]').fill("2");
  await alice.locator('input[name="/b"]').fill("3");
  await alice.getByRole("button", { name: /^Call/ }).click();
  await alice.locator('.call [data-state="done"]').waitFor();
  assert.match(await alice.locator(".call").innerText(), /\b5\b/);
  await alice.screenshot({ path: join(env.SHOTS, "signed-in.png"), fullPage: true });
  const bob = await signInAs("bob", "builder");
  await bob.locator('[data-list="tools"] tbody tr').first().waitFor();
  assert.equal(await addLink(bob).count(), 0, "bob's catalog leaves out what the policy denies him");
  assert.equal((await bob.goto(`${guarded.admin}/console/tool?name=everything__add`)).status(), 404);
  await bob.goto(`${guarded.admin}/console/history`);
  await bob.locator('[data-history="empty"]').waitFor();
  for (const operatorOnly of ["/console/audit", "/console/approvals", "/console/servers/everything"]) {
    assert.equal((await bob.request.get(`${guarded.admin}${operatorOnly}`)).status(), 403, operatorOnly);
  }
  const bobsCsrf = JSON.parse(await bob.locator("body").getAttribute("hx-headers"))["x-csrf-token"];
  const forced = await bob.request.post(`${guarded.admin}/console/tool/call`, {
    form: { tool: "everything__add", "/a": "2", "/b": "3" },
    headers: { "x-csrf-token": bobsCsrf },
  });
  const forcedId = (await forced.text()).match(/data-call="(\d+)"/)[1];
  let forcedStatus = "";
  await until("bob's forced call refused", async () => {
    forcedStatus = await (await bob.request.get(`${guarded.admin}/console/calls/${forcedId}`)).text();
    return forcedStatus.includes('data-state="error"');
  });
  assert.ok(forcedStatus.includes("bob does not add"), forcedStatus);
  assert.equal((await alice.request.get(`${guarded.admin}/console/calls/${forcedId}`)).status(), 404, "alice cannot see bob's call");

  step("page load with 20 servers and 500 tools");
  const many = {};
  for (let i = 0; i < 20; i++) many[`s${i}`] = { command: "python3", args: [env.MANY_TOOLS, `s${i}`, "25"] };
  const big = await startHost(many, "", "big");
  const timing = await context.newPage();
  await timing.goto(`${big.admin}/console/login`);
  await timing.getByLabel("Admin token").fill(TOKEN);
  await timing.getByRole("button", { name: "Sign in" }).click();
  await timing.waitForURL(`${big.admin}/console`);
  await until("every server ready", async () => (await timing.locator('[data-state="ready"]').count()) === 20, 90_000);
  const loads = [];
  for (let run = 0; run < 5; run++) {
    await timing.goto(`${big.admin}/console/catalog`, { waitUntil: "load" });
    assert.equal(await timing.locator('[data-list="tools"] tbody tr').count(), 500);
    loads.push(
      await timing.evaluate(
        () =>
          new Promise((resolve) => {
            // The paint entry may be recorded after the load event.
            new PerformanceObserver((list, observer) => {
              const paint = list.getEntriesByName("first-contentful-paint")[0];
              if (!paint) return;
              observer.disconnect();
              const nav = performance.getEntriesByType("navigation")[0];
              resolve({ load: nav.loadEventEnd, fcp: paint.startTime, bytes: nav.transferSize });
            }).observe({ type: "paint", buffered: true });
          }),
      ),
    );
  }
  await timing.screenshot({ path: join(env.SHOTS, "catalog.png") });
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `console timing: catalog of 500 tools from 20 servers, median of 5 loads: load ${median(loads.map((l) => l.load)).toFixed(0)} ms, ` +
      `first contentful paint ${median(loads.map((l) => l.fcp)).toFixed(0)} ms, ${median(loads.map((l) => l.bytes))} bytes`,
  );
  await browser.close();
}

try {
  await main();
  console.log("console: every check passed");
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  for (const child of started) child.kill("SIGTERM");
}
