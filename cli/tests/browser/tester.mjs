// The web tester in a real headless Chromium: starts `tool-calling serve`, loads the page
// and checks the three panes through what a person sees and clicks.
//
//   node cli/tests/browser/tester.mjs [TESTER_BINARY] [SCREENSHOT_DIR]
//
// TESTER_BINARY defaults to target/debug/tool-calling (build it with
// `cargo build -p tool-calling-cli`). Screenshots of the three panes (discovery.png,
// executor.png, parser.png) go to SCREENSHOT_DIR, by default target/browser.
// CHROMIUM names the browser binary (default /usr/bin/chromium, Debian's package).
// Exits non-zero, naming the failed check, on the first failure.

import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const binary = process.argv[2] ?? "target/debug/tool-calling";
const shots = process.argv[3] ?? "target/browser";
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

/// Starts the tester on a free port and resolves to its address, read from stderr.
function startTester() {
  const child = spawn(binary, ["serve", "--port", "0"], { stdio: ["ignore", "inherit", "pipe"] });
  const address = new Promise((resolve, reject) => {
    let seen = "";
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      const match = seen.match(/http:\/\/127\.0\.0\.1:\d+\//);
      if (match) resolve(match[0]);
    });
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`the tester exited (${code}) before serving: ${seen}`)));
  });
  return { child, address };
}

mkdirSync(shots, { recursive: true });
const shoot = async (page, name) => {
  await page.screenshot({ path: join(shots, `${name}.png`) });
  console.log(`screenshot: ${join(shots, `${name}.png`)}`);
};

const checks = [];
async function check(name, body) {
  await body();
  checks.push(name);
  console.log(`ok - ${name}`);
}

const tester = startTester();
let browser;
try {
  const base = await tester.address;
  // Playwright gives the browser a new, empty profile directory of its own.
  browser = await chromium.launch({
    executablePath,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => { if (message.type() === "error") errors.push(message.text()); });
  await page.goto(base);
  try {
    await page.waitForSelector("body[data-ready=true]", { state: "attached", timeout: 15000 });
  } catch (error) {
    throw new Error(`the page did not finish loading; script errors: ${JSON.stringify(errors)}`, { cause: error });
  }

  await check("discovery lists the callable demo methods and hides internal ones", async () => {
    const names = await page.locator("#method-list .name").allTextContents();
    assert.ok(names.includes("calc_add"), `calc_add listed: ${names}`);
    assert.ok(names.includes("text_repeat"), `text_repeat listed: ${names}`);
    const before = names.length;
    await page.check("#show-internal");
    const all = await page.locator("#method-list .name").count();
    assert.ok(all > before, `"show methods models cannot call" adds some (${before} → ${all})`);
    await page.uncheck("#show-internal");
  });

  await check("discovery search narrows the list, the detail shows constraints", async () => {
    await page.fill("#search", "repeat");
    assert.deepEqual(await page.locator("#method-list .name").allTextContents(), ["text_repeat"]);
    await page.click("#method-list li");
    const detail = await page.textContent("#method-detail");
    assert.match(detail, /times \*/, "the required parameter `times`");
    assert.match(detail, /minimum: 1/, "its constraint");
    await shoot(page, "discovery");
    await page.fill("#search", "");
  });

  await check("the prompt is shown per protocol", async () => {
    assert.match(await page.textContent("#prompt-text"), /<<<\[TOOL_REQUEST\]>>>/);
    await page.selectOption("#prompt-protocol", "anthropic");
    await page.waitForFunction(() => document.getElementById("prompt-text").textContent.includes("input_schema"));
    await page.selectOption("#prompt-protocol", "vcp");
  });

  await check("load into the executor opens the form for that method", async () => {
    await page.click("#load-into-executor");
    assert.equal(await page.inputValue("#exec-method"), "text_repeat");
    assert.ok(await page.isVisible("#executor"), "the executor pane is shown");
    assert.ok(await page.isVisible("#arg-times"), "a field for `times`");
  });

  await check("a demo tool runs from the form", async () => {
    await page.selectOption("#exec-method", "calc_add");
    await page.fill("#arg-a", "2");
    await page.fill("#arg-b", "40");
    await page.click("#exec-run");
    await page.waitForSelector("#exec-status");
    assert.equal(await page.textContent("#exec-status"), "success");
    assert.equal(await page.textContent("#exec-output"), "42.0");
    assert.equal(await page.locator("#exec-history li").count(), 1);
  });

  await check("a failing call shows its error kind", async () => {
    await page.selectOption("#exec-method", "calc_divide");
    await page.fill("#arg-a", "1");
    await page.fill("#arg-b", "0");
    await page.click("#exec-run");
    await page.waitForFunction(() => document.getElementById("exec-status")?.textContent === "error");
    assert.match(await page.textContent("#exec-result"), /division by zero/);
    assert.equal(await page.locator("#exec-history li").count(), 2);
    await shoot(page, "executor");
  });

  await check("the parser highlights requests and lists diagnostics", async () => {
    await page.click("#tab-parser");
    await page.selectOption("#sample", { label: "VCP: calls to the demo tools" });
    await page.click("#parse-run");
    await page.waitForSelector("#highlighted mark.req");
    const reply = await page.inputValue("#reply");
    assert.equal(await page.textContent("#highlighted"), reply, "the highlighted text is the reply, whole");
    const requests = await page.locator("#requests > li").count();
    assert.equal(requests, 3);
    const marked = await page.$$eval("#highlighted mark[data-req]", (marks) => new Set(marks.map((m) => m.dataset.req)).size);
    assert.equal(marked, requests, "each request is marked in the text");
    const first = await page.$$eval("#highlighted mark[data-req=req-0]", (marks) => marks.map((m) => m.textContent).join(""));
    assert.ok(first.startsWith("<<<[TOOL_REQUEST]>>>"), `the first mark is the first block: ${first.slice(0, 40)}`);
    assert.ok(await page.locator("#highlighted mark.incomplete").count() > 0, "the cut-off request is marked incomplete");
    const diagnostics = await page.locator("#diagnostics > li").count();
    assert.ok(diagnostics >= 1, "the cut-off block is diagnosed");
    await page.click("#diagnostics > li >> nth=0");
    assert.ok(await page.locator("#highlighted mark.flash").count() > 0, "clicking a diagnostic marks its span");
  });

  await check("hidden reasoning is marked", async () => {
    await page.selectOption("#sample", { label: "VCP: reasoning, three calls, one cut off" });
    await page.click("#parse-run");
    await page.waitForSelector("#highlighted mark.hidden-reasoning");
    const hidden = await page.$$eval("#highlighted mark.hidden-reasoning", (marks) => marks.map((m) => m.textContent).join(""));
    assert.ok(hidden.startsWith("<think>"), "the think block");
  });

  await check("run this cycle shows results and what is fed back", async () => {
    await page.selectOption("#sample", { label: "VCP: calls to the demo tools" });
    await page.click("#cycle-run");
    await page.waitForSelector("#cycle-results li");
    const results = await page.locator("#cycle-results li").allTextContents();
    assert.equal(results.length, 3);
    assert.match(results[0], /42\.0/);
    assert.match(await page.textContent("#cycle-context"), /42\.0/);
  });

  await check("an open-model format shows its normal text", async () => {
    await page.selectOption("#sample", { label: "Hermes (Qwen): two calls" });
    assert.equal(await page.inputValue("#parse-protocol"), "hermes");
    await page.click("#parse-run");
    await page.waitForSelector("#normal-box:not([hidden])");
    assert.equal(await page.locator("#requests > li").count(), 2);
  });

  await check("gpt-oss's harmony reply: its calls, its preamble as text, no reasoning", async () => {
    await page.selectOption("#sample", { label: "gpt-oss (harmony): reasoning, a preamble, two calls" });
    assert.equal(await page.inputValue("#parse-protocol"), "harmony");
    await page.click("#parse-run");
    await page.waitForSelector("#normal-box:not([hidden])");
    assert.equal(await page.locator("#requests > li").count(), 2);
    const normal = await page.textContent("#normal");
    assert.match(normal, /Adding and echoing\./);
    assert.doesNotMatch(normal, /independent calls/);
  });

  await check("the API answers a bad request with a JSON error", async () => {
    const response = await fetch(new URL("/api/parse", base), {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ protocol: "nope", text: "" }),
    });
    assert.equal(response.status, 400);
    assert.match((await response.json()).error, /unknown protocol `nope`/);
  });

  await page.selectOption("#sample", { label: "VCP: calls to the demo tools" });
  await page.click("#parse-run");
  await page.waitForSelector("#highlighted mark.req");
  await shoot(page, "parser");

  assert.deepEqual(errors, [], "no script errors on the page");
  console.log(`${checks.length} checks passed`);
} finally {
  await browser?.close();
  tester.child.kill();
}
