// The tester's page: three panes over the JSON API of `tester serve`. Everything the
// library decides (discovery, prompts, parsing, execution) comes from the API; this file
// only shows it.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  for (const child of children) node.append(child);
  return node;
};

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const raw = await response.text();
  let data;
  try {
    data = JSON.parse(raw);
  } catch {
    throw new Error(raw || response.statusText); // a plain-text error (a malformed request)
  }
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

// ---------------------------------------------------------------------------------------
// Tabs

function show(pane) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.pane === pane);
  for (const section of document.querySelectorAll(".pane")) section.classList.toggle("active", section.id === pane);
}
for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => show(tab.dataset.pane));

// ---------------------------------------------------------------------------------------
// Discovery

let methods = []; // {tool, method, full}
let selected = null;

function fullName(tool, method) { return `${tool.tool_id}_${method.name}`; }

function constraints(schema) {
  const keys = ["minimum", "maximum", "minLength", "maxLength", "pattern", "enum", "format"];
  return keys.filter((k) => schema && schema[k] !== undefined)
    .map((k) => `${k}: ${JSON.stringify(schema[k])}`).join(", ");
}

function renderMethods() {
  const query = $("search").value.trim().toLowerCase();
  const showInternal = $("show-internal").checked;
  const sort = $("sort").value;
  let shown = methods.filter(({ tool, method, full }) =>
    (showInternal || method.agent_callable) &&
    [full, tool.tool_name, tool.description, method.description].join(" ").toLowerCase().includes(query));
  shown.sort((a, b) => sort === "name" ? a.method.name.localeCompare(b.method.name)
    : sort === "params" ? a.method.parameters.length - b.method.parameters.length || a.full.localeCompare(b.full)
    : a.full.localeCompare(b.full));
  const list = $("method-list");
  list.replaceChildren(...shown.map((entry) => {
    const item = el("li", { className: entry === selected ? "selected" : "" },
      el("div", { className: "name", textContent: entry.full }),
      el("div", { className: "desc", textContent: entry.method.description }));
    if (!entry.method.agent_callable) item.querySelector(".name").append(el("span", { className: "badge", textContent: "not callable" }));
    item.dataset.method = entry.full;
    item.addEventListener("click", () => { selected = entry; renderMethods(); renderDetail(); });
    return item;
  }));
}

function renderDetail() {
  const box = $("method-detail");
  if (!selected) return;
  const { tool, method, full } = selected;
  const rows = method.parameters.map((p) => el("tr", {},
    el("td", { className: "code", textContent: p.name + (p.required ? " *" : "") }),
    el("td", { textContent: p.type }),
    el("td", { className: "code", textContent: p.default === null || p.default === undefined ? "" : JSON.stringify(p.default) }),
    el("td", { textContent: [p.description || "", constraints(method.schema?.properties?.[p.name])].filter(Boolean).join(" — ") })));
  const table = el("table", {}, el("tr", {}, ...["parameter", "type", "default", "description"].map((h) => el("th", { textContent: h }))), ...rows);
  const examples = method.examples.map((e) => el("li", {}, el("div", { textContent: e.description }),
    el("pre", { className: "code", textContent: JSON.stringify(e.input) + (e.output ? `\n→ ${e.output}` : "") })));
  const load = el("button", { textContent: "Load into the executor", id: "load-into-executor" });
  load.disabled = !method.agent_callable;
  load.addEventListener("click", () => { $("exec-method").value = full; buildForm(); show("executor"); });
  box.replaceChildren(
    el("h3", { className: "code", textContent: full }),
    el("p", { textContent: method.description }),
    el("p", { className: "muted", textContent: `${tool.tool_name} — ${tool.description}` }),
    method.parameters.length ? table : el("p", { className: "muted", textContent: "No parameters." }),
    ...(examples.length ? [el("h3", { textContent: "Examples" }), el("ul", {}, ...examples)] : []),
    el("div", { className: "toolbar" }, load));
}

async function loadPrompt() {
  const protocol = $("prompt-protocol").value;
  const lang = $("prompt-lang").value;
  try {
    const data = await api(`/api/prompt?protocol=${encodeURIComponent(protocol)}&lang=${lang}`);
    $("prompt-text").textContent = data.text !== undefined ? data.text : JSON.stringify(data.json, null, 2);
  } catch (error) {
    $("prompt-text").textContent = `error: ${error.message}`;
  }
}

$("copy-prompt").addEventListener("click", async () => {
  try {
    await navigator.clipboard.writeText($("prompt-text").textContent);
    $("copy-status").textContent = "copied";
  } catch {
    $("copy-status").textContent = "select the text and copy it";
  }
});
for (const id of ["search", "sort", "show-internal"]) $(id).addEventListener("input", renderMethods);
for (const id of ["prompt-protocol", "prompt-lang"]) $(id).addEventListener("change", loadPrompt);

// ---------------------------------------------------------------------------------------
// Executor

const history = [];

function methodByName(full) { return methods.find((m) => m.full === full); }

function buildForm() {
  const entry = methodByName($("exec-method").value);
  const form = $("exec-form");
  form.replaceChildren();
  if (!entry) return;
  $("exec-description").textContent = entry.method.description;
  const properties = entry.method.schema?.properties || {};
  for (const p of entry.method.parameters) {
    const schema = properties[p.name] || {};
    const types = [].concat(schema.type || p.type);
    let input;
    if (schema.enum) {
      input = el("select", {}, ...schema.enum.map((v) => el("option", { value: JSON.stringify(v), textContent: String(v) })));
    } else if (types.includes("boolean")) {
      input = el("input", { type: "checkbox" });
    } else if (types.includes("integer") || types.includes("number")) {
      input = el("input", { type: "number", step: types.includes("integer") ? "1" : "any" });
    } else if (types.includes("object") || types.includes("array")) {
      input = el("textarea", { className: "code", rows: 3, placeholder: "JSON" });
    } else {
      input = el("input", { type: "text" });
    }
    input.name = p.name;
    input.id = `arg-${p.name}`;
    input.dataset.types = types.join(",");
    if (p.default !== null && p.default !== undefined) {
      if (input.type === "checkbox") input.checked = Boolean(p.default);
      else input.value = typeof p.default === "string" ? p.default : JSON.stringify(p.default);
    }
    form.append(el("label", { htmlFor: input.id, className: p.required ? "required" : "", textContent: p.name }), input);
    const hint = [p.type, constraints(schema), p.description].filter(Boolean).join(" — ");
    if (hint) form.append(el("div", { className: "hint", textContent: hint }));
  }
  syncRaw();
}

/// The form's values as an arguments object (empty optional fields left out).
function formArgs() {
  const args = {};
  for (const input of $("exec-form").querySelectorAll("input, select, textarea")) {
    const types = input.dataset.types.split(",");
    if (input.type === "checkbox") { args[input.name] = input.checked; continue; }
    if (input.value === "") continue;
    if (input.tagName === "SELECT") args[input.name] = JSON.parse(input.value);
    else if (input.type === "number") args[input.name] = Number(input.value);
    else if (types.includes("object") || types.includes("array")) {
      try { args[input.name] = JSON.parse(input.value); } catch { args[input.name] = input.value; }
    } else args[input.name] = input.value;
  }
  return args;
}

function syncRaw() { $("exec-raw").value = JSON.stringify(formArgs(), null, 2); }

$("exec-method").addEventListener("change", buildForm);
$("exec-form").addEventListener("input", syncRaw);
$("raw-mode").addEventListener("change", () => {
  const raw = $("raw-mode").checked;
  $("exec-form").hidden = raw;
  $("exec-raw").hidden = !raw;
});

function showResult(result) {
  const ok = result.status === "success";
  $("exec-result").replaceChildren(
    el("div", {},
      el("span", { className: `status ${ok ? "success" : "error"}`, id: "exec-status", textContent: result.status }),
      el("span", { className: "muted", textContent: ` in ${result.duration_ms} ms` }),
      result.error_kind ? el("span", { className: "badge error", textContent: result.error_kind }) : ""),
    el("pre", { className: "code", id: "exec-output", textContent: result.result }));
}

$("exec-run").addEventListener("click", async () => {
  const toolName = $("exec-method").value;
  let args;
  try {
    args = $("raw-mode").checked ? JSON.parse($("exec-raw").value) : formArgs();
  } catch (error) {
    $("exec-result").textContent = `The arguments are not JSON: ${error.message}`;
    return;
  }
  const timeout = Number($("exec-timeout").value) || undefined;
  try {
    const result = await api("/api/exec", { tool_name: toolName, args, timeout_ms: timeout });
    showResult(result);
    history.unshift({ toolName, args, result });
    history.length = Math.min(history.length, 10);
    $("exec-history").replaceChildren(...history.map((run) => {
      const item = el("li", {},
        el("span", { className: "code", textContent: `${run.toolName}(${JSON.stringify(run.args)})` }),
        el("span", { className: `badge ${run.result.status}`, textContent: run.result.status }));
      item.addEventListener("click", () => {
        $("exec-method").value = run.toolName; buildForm();
        $("raw-mode").checked = true; $("raw-mode").dispatchEvent(new Event("change"));
        $("exec-raw").value = JSON.stringify(run.args, null, 2);
        showResult(run.result);
      });
      return item;
    }));
  } catch (error) {
    $("exec-result").textContent = `error: ${error.message}`;
  }
});

// ---------------------------------------------------------------------------------------
// Parser

const encoder = new TextEncoder();

/// Byte offsets (UTF-8, as the library reports them) → indexes into the JS string.
function byteIndex(text) {
  const map = new Map([[0, 0]]);
  let bytes = 0;
  let index = 0;
  for (const ch of text) {
    bytes += encoder.encode(ch).length;
    index += ch.length;
    map.set(bytes, index);
  }
  return (offset) => map.get(offset) ?? text.length;
}

function parseBody() {
  return {
    protocol: $("parse-protocol").value,
    text: $("reply").value,
    fuzzy: $("opt-fuzzy").checked,
    skip_fenced: $("opt-fenced").checked,
    keep_think: $("opt-think").checked,
  };
}

/// The reply with the requests, hidden parts and diagnostics marked.
function highlight(text, data) {
  const at = byteIndex(text);
  const spans = [];
  (data.requests || []).forEach((r, i) => {
    if (r.end > r.start) spans.push({ start: at(r.start), end: at(r.end), cls: r.complete ? "req" : "req incomplete", key: `req-${i}` });
  });
  for (const h of data.hidden || []) spans.push({ start: at(h.start), end: at(h.end), cls: `hidden-${h.kind}` });
  (data.diagnostics || []).forEach((d, i) => {
    if (d.end > d.start) spans.push({ start: at(d.start), end: at(d.end), cls: "diag", key: `diag-${i}` });
  });
  const cuts = new Set([0, text.length]);
  for (const s of spans) { cuts.add(s.start); cuts.add(s.end); }
  const points = [...cuts].sort((a, b) => a - b);
  const box = $("highlighted");
  box.replaceChildren();
  for (let i = 0; i + 1 < points.length; i++) {
    const [from, to] = [points[i], points[i + 1]];
    const covering = spans.filter((s) => s.start <= from && to <= s.end);
    const piece = text.slice(from, to);
    if (!covering.length) { box.append(piece); continue; }
    const mark = el("mark", { className: covering.map((s) => s.cls).join(" "), textContent: piece });
    for (const s of covering) if (s.key) mark.dataset[s.key.startsWith("req") ? "req" : "diag"] = s.key;
    box.append(mark);
  }
}

function flash(selector) {
  const marks = document.querySelectorAll(selector);
  if (!marks.length) return;
  marks[0].scrollIntoView({ block: "center" });
  for (const mark of marks) { mark.classList.add("flash"); setTimeout(() => mark.classList.remove("flash"), 1200); }
}

$("parse-run").addEventListener("click", async () => {
  $("cycle-box").hidden = true;
  try {
    const data = await api("/api/parse", parseBody());
    highlight($("reply").value, data);
    $("request-count").textContent = `(${data.requests.length})`;
    $("requests").replaceChildren(...data.requests.map((r, i) => {
      const item = el("li", {},
        el("span", { className: "name", textContent: r.tool_name || "(no name)" }),
        el("span", { className: `badge ${r.complete ? "success" : "error"}`, textContent: r.complete ? "complete" : "incomplete" }),
        el("pre", { className: "code", textContent: JSON.stringify(r.args, null, 1) }),
        ...r.problems.map((p) => el("div", { className: "desc", textContent: p })));
      item.addEventListener("click", () => flash(`mark[data-req="req-${i}"]`));
      return item;
    }));
    $("diagnostic-count").textContent = `(${data.diagnostics.length})`;
    $("diagnostics").replaceChildren(...data.diagnostics.map((d, i) => {
      const item = el("li", {}, el("span", { className: "badge error", textContent: d.kind }), " ", d.message);
      item.addEventListener("click", () => flash(`mark[data-diag="diag-${i}"]`));
      return item;
    }));
    $("normal-box").hidden = data.normal_text === undefined;
    $("normal").textContent = data.normal_text ?? "";
  } catch (error) {
    $("highlighted").textContent = `error: ${error.message}`;
  }
});

$("cycle-run").addEventListener("click", async () => {
  try {
    const data = await api("/api/cycle", parseBody());
    $("cycle-box").hidden = false;
    $("cycle-results").replaceChildren(...data.results.map((r) => el("li", {},
      el("span", { className: "name", textContent: r.tool_name }),
      el("span", { className: `badge ${r.status}`, textContent: r.error_kind || r.status }),
      el("div", { className: "desc", textContent: r.result }))));
    $("cycle-context").textContent = typeof data.context === "string" ? data.context : JSON.stringify(data.context, null, 2);
  } catch (error) {
    $("cycle-box").hidden = false;
    $("cycle-context").textContent = `error: ${error.message}`;
  }
});

let samples = [];
$("sample").addEventListener("change", () => {
  const sample = samples[Number($("sample").value)];
  if (!sample) return;
  $("reply").value = sample.text;
  $("parse-protocol").value = sample.protocol;
});

// ---------------------------------------------------------------------------------------
// Start

async function start() {
  const protocols = await api("/api/protocols");
  for (const id of ["prompt-protocol", "parse-protocol"]) {
    $(id).replaceChildren(...protocols.map((p) => el("option", { value: p.name, textContent: p.native ? `${p.name} (native JSON)` : p.name })));
  }
  const { tools } = await api("/api/tools");
  methods = tools.flatMap((tool) => tool.methods.map((method) => ({ tool, method, full: fullName(tool, method) })));
  renderMethods();
  $("exec-method").replaceChildren(...methods.filter((m) => m.method.agent_callable)
    .map((m) => el("option", { value: m.full, textContent: m.full })));
  buildForm();
  samples = await api("/api/samples");
  $("sample").append(...samples.map((s, i) => el("option", { value: String(i), textContent: s.name })));
  await loadPrompt();
  document.body.dataset.ready = "true";
}

start().catch((error) => { document.body.prepend(el("p", { className: "badge error", textContent: `error: ${error.message}` })); });
