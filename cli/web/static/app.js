// memdir ui: the page over the JSON API (docs/HTTP.md). Plain DOM, no library, nothing
// fetched from anywhere but this server. Text from the memdir is only ever set as text.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const main = () => document.getElementById("main");

function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "style") node.style.cssText = value; // CSSOM: the CSP allows no inline style
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return rest.join("=");
  }
  return "";
}

async function api(path, body) {
  const options = { credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.headers["X-CSRF-Token"] = cookie("memdir_csrf");
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) {
    const error = new Error(data.error || response.statusText);
    error.hint = data.hint || "";
    error.status = response.status;
    throw error;
  }
  return data;
}

function say(text, error) {
  const bar = document.getElementById("status");
  bar.replaceChildren(text ? h("div", { class: error ? "message error" : "message", role: "status" }, text) : "");
}

function failed(error) {
  if (error.status === 401) {
    return h("div", { class: "card", id: "signin" }, h("h1", {}, "Sign in"),
      h("p", {}, "Open the one-time link that `memdir ui` printed in your terminal."),
      h("p", { class: "meta" }, error.message));
  }
  return h("div", { class: "message error" }, error.message, error.hint ? ` — ${error.hint}` : "");
}

const idLink = (id) => h("a", { class: "id", href: `#/memory/${encodeURIComponent(id)}` }, id);
const badge = (text) => h("span", { class: `badge ${text}` }, text);
const day = (at) => (at || "").slice(0, 10);

function historyOf(rows) {
  if (!rows || !rows.length) return null;
  return h("details", {}, h("summary", { class: "meta" }, `history (${rows.length})`),
    h("table", {}, rows.map((step) => h("tr", {}, h("td", {}, step.at || ""), h("td", {}, step.what || ""),
      h("td", {}, step.detail || "")))));
}

function side(row) {
  return h("div", { class: "card side", "data-id": row.id },
    h("p", { class: "text" }, row.text),
    h("p", { class: "meta" }, idLink(row.id), " · ", badge(row.status), ` · ${row.source} by ${row.author}, ${day(row.created)}`,
      row.key ? ` · key ${row.key}` : ""),
    historyOf(row.history));
}

// review --------------------------------------------------------------------------------------
async function decide(id, action, body) {
  try {
    const done = await api(`/api/memories/${encodeURIComponent(id)}/${action}`, body);
    say(`${action}: ${done.id || id} — ${done.message || "done"}`);
  } catch (error) {
    say(`${error.message}${error.hint ? " — " + error.hint : ""}`, true);
  }
  route();
}

async function reviewView() {
  const data = await api("/api/review");
  const out = [h("h1", {}, "Needs your decision")];
  out.push(h("h2", {}, `Inferences awaiting confirmation (${data.queue.length})`));
  if (!data.queue.length) out.push(h("p", { class: "muted" }, "Nothing to confirm."));
  for (const row of data.queue) {
    const reason = h("input", { type: "text", placeholder: "your words, or why it is wrong", "aria-label": "reason" });
    out.push(h("div", { class: "card review-item", "data-id": row.id },
      h("p", { class: "text" }, row.text),
      h("p", { class: "meta" }, idLink(row.id), " · ", badge(row.status), ` · ${row.source} by ${row.author}, ${day(row.created)}`,
        row.expires ? ` · expires in ${row.expires_in}` : " · no expiry"),
      historyOf(row.history),
      h("div", { class: "row" }, reason,
        h("button", { class: "good", "data-action": "confirm", onclick: () => decide(row.id, "confirm", { reason: reason.value }) }, "Confirm"),
        h("button", { class: "bad", "data-action": "reject", onclick: () => {
          if (!reason.value.trim()) { say("A rejection needs a reason: type it first.", true); return; }
          decide(row.id, "reject", { reason: reason.value });
        } }, "Reject"))));
  }
  out.push(h("h2", {}, `Contradiction candidates (${data.contradictions.length})`));
  for (const row of data.contradictions) {
    const [one, other] = row.sides;
    const reason = h("input", { type: "text", placeholder: "why the rejected side is wrong", "aria-label": "reason" });
    out.push(h("div", { class: "card contradiction" },
      h("p", { class: "meta" }, `${row.link} since ${day(row.at)} (by ${row.by})`),
      h("div", { class: "pair" }, side(one), side(other)),
      h("div", { class: "row" }, reason,
        h("button", { "data-action": "compatible", onclick: () => decide(one.id, "link", { to: other.id, type: "compatible" }) }, "Both hold (compatible)"),
        h("button", { class: "bad", onclick: () => decide(one.id, "reject", { reason: reason.value }) }, "Reject left"),
        h("button", { class: "bad", onclick: () => decide(other.id, "reject", { reason: reason.value }) }, "Reject right"))));
  }
  out.push(h("h2", {}, `Automatic changes from sleep (${data.automatic_supersedes.length})`));
  for (const row of data.automatic_supersedes) {
    out.push(h("div", { class: "card supersede" },
      h("p", { class: "meta" }, `sleep superseded the older teaching on ${day(row.at)}`),
      h("div", { class: "pair" }, side(row.old), side(row.new)),
      h("div", { class: "row" },
        h("button", { "data-action": "undo", onclick: () => decide(row.new.id, "link", { to: row.old.id, type: "compatible" }) }, "Undo: both hold"))));
  }
  out.push(h("h2", {}, `Stale hard facts (${data.stale_hard_facts.length})`));
  for (const row of data.stale_hard_facts) {
    out.push(h("div", { class: "card" }, h("p", {}, `${row.key}: `, row.text),
      h("p", { class: "meta" }, idLink(row.id), ` · last affirmed ${day(row.affirmed)} (${row.age} ago): still true? teach its current wording with --key ${row.key}`)));
  }
  out.push(h("h2", {}, `Teachings quoting a turn no harness recorded (${data.unvouched_teachings.length})`));
  for (const row of data.unvouched_teachings) out.push(side(row));
  return out;
}

// recall, explained -----------------------------------------------------------------------------
function stageSummary(stage) {
  const dropped = stage.rows.filter((row) => row.dropped);
  return h("div", { class: "stage", "data-stage": stage.name },
    h("b", {}, stage.name), h("span", { class: "meta" }, `${stage.rows.length} rows`),
    stage.notes.map((note) => h("div", { class: "meta" }, note)),
    dropped.length ? h("details", {}, h("summary", {}, `dropped ${dropped.length}`),
      dropped.map((row) => h("div", { class: "meta dropped", "data-id": row.id }, `${row.id}: ${row.dropped}`))) : null);
}

function bars(result, weights) {
  const rows = [];
  for (const [name, weight] of Object.entries(weights.components)) {
    if (!weight) continue;
    const value = result.components[name] || 0;
    rows.push(h("span", {}, name),
      h("div", { class: "bar", title: `${weight} × ${value}` },
        h("span", { class: "fill", "data-component": name, "data-value": value, "data-weight": weight,
          style: `width:${Math.max(0, Math.min(1, value)) * 100}%` })),
      h("span", { class: "meta" }, `${weight} × ${value.toFixed(2)}`));
  }
  const decay = result.components.decay;
  if (decay !== undefined) {
    rows.push(h("span", {}, "decay F"),
      h("div", { class: "bar" }, h("span", { class: "fill", "data-component": "decay", "data-value": decay, style: `width:${decay * 100}%` })),
      h("span", { class: "meta" }, `× (1 − ${weights.decay_strength}(1 − ${decay.toFixed(2)}))`));
  }
  return h("div", { class: "bars" }, rows);
}

async function recallView(params) {
  const q = params.get("q") || "";
  const form = h("form", { class: "card", id: "recall-form" },
    h("div", { class: "row" },
      h("input", { type: "text", name: "q", value: q, placeholder: "ask your memory…", "aria-label": "query" }),
      h("input", { type: "text", name: "now", value: params.get("now") || "", placeholder: "now (ISO, optional)", "aria-label": "now", size: 22 }),
      h("label", {}, h("input", { type: "checkbox", name: "include_private", checked: params.get("include_private") === "true" }), " private"),
      h("button", { type: "submit" }, "Recall")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const name of ["q", "now"]) if (form.elements[name].value.trim()) next.set(name, form.elements[name].value.trim());
    if (form.elements.include_private.checked) next.set("include_private", "true");
    location.hash = `#/recall?${next}`;
  });
  const out = [h("h1", {}, "Recall, explained"), form];
  if (!q) return out;
  const data = await api(`/api/recall?${params}`);
  const found = data.recall;
  out.push(h("p", { id: "verdict" }, "verdict ", badge(found.verdict), ` · profile ${found.profile} · now ${found.now} · ${found.milliseconds} ms`));
  out.push(h("h2", {}, "The pipeline"), h("div", { class: "pipeline" }, found.stages.map(stageSummary)));
  out.push(h("h2", {}, `Results (${found.results.length})`));
  found.results.forEach((result, rank) => {
    out.push(h("div", { class: "card result", "data-id": result.id },
      h("p", { class: "text" }, `#${rank + 1} `, result.text),
      h("p", { class: "meta" }, idLink(result.id), " · ", badge(result.status), ` · score ${result.score} · weight ×${result.weight} · ${result.source}, ${day(result.created)}`,
        result.note ? ` · ${result.note}` : ""),
      bars(result, data.weights)));
  });
  out.push(h("h2", {}, "What the per-prompt block would carry (memdir context)"),
    h("pre", { id: "context-block" }, data.context.markdown || "(nothing: the block stays empty unless the recall is grounded)"));
  return out;
}

// one memory ------------------------------------------------------------------------------------
function decayCurve(decay) {
  const width = 640, height = 220, pad = 34;
  const points = decay.curve.points;
  const t0 = Date.parse(points[0].at), t1 = Date.parse(points[points.length - 1].at);
  const x = (at) => pad + ((Date.parse(at) - t0) / Math.max(1, t1 - t0)) * (width - 2 * pad);
  const y = (value) => height - pad - value * (height - 2 * pad);
  const past = points.filter((p) => !p.future), future = points.filter((p, i) => p.future || (i > 0 && points[i - 1].future === false && p.future));
  const line = (list) => list.map((p) => `${x(p.at).toFixed(1)},${y(p.fidelity).toFixed(1)}`).join(" ");
  const nowX = x(decay.curve.now);
  const forecastStart = past.length ? [past[past.length - 1]] : [];
  return s("svg", { viewBox: `0 0 ${width} ${height}`, id: "decay-curve", role: "img", "aria-label": "fidelity over time" },
    s("line", { x1: pad, y1: y(0), x2: width - pad, y2: y(0), stroke: "#bbb" }),
    s("line", { x1: pad, y1: y(1), x2: width - pad, y2: y(1), stroke: "#eee" }),
    s("line", { x1: pad, y1: y(0.5), x2: width - pad, y2: y(0.5), stroke: "#eee", "stroke-dasharray": "3 3" }),
    s("text", { x: 2, y: y(1) + 4, "font-size": 11 }, "1.0"), s("text", { x: 2, y: y(0.5) + 4, "font-size": 11 }, "0.5"),
    s("text", { x: 2, y: y(0) + 4, "font-size": 11 }, "0"),
    s("polyline", { points: line(past), fill: "none", stroke: "#2f6fb3", "stroke-width": 2, class: "past" }),
    s("polyline", { points: line([...forecastStart, ...future]), fill: "none", stroke: "#2f6fb3", "stroke-width": 2, "stroke-dasharray": "5 4", class: "forecast" }),
    s("line", { x1: nowX, y1: pad / 2, x2: nowX, y2: y(0), stroke: "#9a6700" }),
    s("text", { x: nowX + 3, y: pad / 2 + 8, "font-size": 11, fill: "#9a6700" }, "now"),
    decay.curve.rehearsals.map((at) => s("circle", { cx: x(at), cy: y(0) - 6, r: 4, fill: "#2e7d32", class: "rehearsal" }, s("title", {}, `rehearsed ${at}`))),
    s("text", { x: pad, y: height - 8, "font-size": 11 }, day(points[0].at)),
    s("text", { x: width - pad, y: height - 8, "font-size": 11, "text-anchor": "end" }, day(points[points.length - 1].at)));
}

async function memoryView(id) {
  const data = await api(`/api/memories/${encodeURIComponent(id)}`);
  const memory = data.memory;
  const out = [h("h1", {}, "A memory"),
    h("div", { class: "card", id: "memory-text" }, h("p", { class: "text" }, memory.text === null ? "(forgotten)" : memory.text),
      h("p", { class: "meta" }, idLink(memory.id), " · ", badge(memory.status), ` · ${memory.source || "—"} by ${memory.author || "—"} · created ${memory.created}`,
        memory.visibility && memory.visibility !== "normal" ? ` · ${memory.visibility}` : "", memory.key ? ` · key ${memory.key}` : "",
        memory.type ? ` · ${memory.type}${memory.subtype ? ":" + memory.subtype : ""}` : ""),
      h("p", {}, h("a", { href: `#/links/${encodeURIComponent(memory.id)}` }, "its links as a graph")))];
  if (memory.meta && Object.keys(memory.meta).length) {
    out.push(h("h2", {}, "Provenance"), h("table", {}, Object.entries(memory.meta).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "string" ? v : JSON.stringify(v))))));
  }
  out.push(h("h2", {}, "Status history"), h("table", { id: "history" }, data.log.history.map((step) =>
    h("tr", {}, h("td", {}, step.at || ""), h("td", {}, badge(step.what || "")), h("td", {}, step.detail || "")))));
  out.push(h("h2", {}, "Links"), h("div", { class: "card" },
    h("p", {}, "out: ", data.links.out.length ? data.links.out.map((l) => h("span", {}, `${l.type} → `, idLink(l.to), " ")) : "none"),
    h("p", {}, "in: ", data.links.in.length ? data.links.in.map((l) => h("span", {}, `${l.type} ← `, idLink(l.from), " ")) : "none")));
  if (data.decay) {
    const decay = data.decay;
    out.push(h("h2", {}, "Decay"), h("p", { class: "meta", id: "decay-now" },
      `fidelity ${decay.fidelity} now · stability ${decay.stability_days} d · ${decay.rehearsals} rehearsals · recall × ${decay.recall_multiplier} · below 0.5 from ${decay.below_half_at || "never"}`),
      decayCurve(decay),
      h("table", { id: "forecast" }, h("tr", {}, h("th", {}, "forecast without rehearsal"), decay.forecast.map((row) => h("td", {}, `+${row.after}: ${row.fidelity}`)))));
  }
  return out;
}

// links -------------------------------------------------------------------------------------------
async function linksView(id, params) {
  const depth = params.get("depth") || "2";
  const data = await api(`/api/memories/${encodeURIComponent(id)}/links?depth=${encodeURIComponent(depth)}`);
  const size = 640, centre = size / 2;
  const rings = {};
  for (const node of data.memories) (rings[node.depth] = rings[node.depth] || []).push(node);
  const place = {};
  for (const [level, nodes] of Object.entries(rings)) {
    const radius = Number(level) * (centre - 70) / Math.max(1, data.depth);
    nodes.forEach((node, index) => {
      const angle = (2 * Math.PI * index) / nodes.length - Math.PI / 2 + Number(level) * 0.4;
      place[node.id] = [centre + radius * Math.cos(angle), centre + radius * Math.sin(angle)];
    });
  }
  const colour = { contradicts: "#b3261e", "contradiction-candidate": "#b3261e", compatible: "#2e7d32", "superseded-by": "#9a6700", resonates: "#7b4bb3" };
  const edges = data.links.filter((edge) => place[edge.from] && place[edge.to]).map((edge) => {
    const [x1, y1] = place[edge.from], [x2, y2] = place[edge.to];
    return s("g", { class: "edge", "data-type": edge.type },
      s("line", { x1, y1, x2, y2, stroke: colour[edge.type] || "#8895a2", "stroke-width": 1.6, "marker-end": "url(#arrow)" }),
      s("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 3, "font-size": 10, "text-anchor": "middle", fill: "#5f6b76" }, edge.type));
  });
  const nodes = data.memories.map((node) => {
    const [x, y] = place[node.id];
    const label = (node.text || "").length > 28 ? node.text.slice(0, 27) + "…" : node.text || "";
    return s("g", { class: "node", "data-id": node.id, onclick: () => { location.hash = `#/memory/${encodeURIComponent(node.id)}`; } },
      s("circle", { cx: x, cy: y, r: node.depth === 0 ? 11 : 8, fill: node.depth === 0 ? "#2f6fb3" : "#fff", stroke: "#2f6fb3", "stroke-width": 2 }),
      s("text", { x, y: y + 22, "font-size": 11, "text-anchor": "middle" }, label),
      s("title", {}, `${node.id} (${node.status}): ${node.text || ""}`));
  });
  const defs = s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 18, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" },
    s("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#8895a2" })));
  const depths = [1, 2, 3, 4, 5].map((n) => n === data.depth ? h("b", {}, ` ${n} `)
    : h("a", { href: `#/links/${encodeURIComponent(data.id)}?depth=${n}` }, ` ${n} `));
  return [h("h1", {}, "Links"), h("p", { class: "meta" }, "the neighbourhood of ", idLink(data.id), ` within ${data.depth} links: ${data.memories.length} memories, ${data.links.length} links · depth`, depths),
    s("svg", { viewBox: `0 0 ${size} ${size}`, id: "graph", role: "img", "aria-label": "links graph" }, defs, edges, nodes),
    h("table", {}, data.links.map((edge) => h("tr", {}, h("td", {}, idLink(edge.from)), h("td", {}, edge.type), h("td", {}, edge.to.startsWith("t-") ? edge.to : idLink(edge.to)))))];
}

// timeline ------------------------------------------------------------------------------------------
async function timelineView(params) {
  const data = await api(`/api/timeline?${params}`);
  const form = h("form", { class: "filters card", id: "timeline-form" },
    h("select", { name: "person", "aria-label": "person" }, h("option", { value: "" }, "anyone"),
      data.people.map((name) => h("option", { value: name, selected: params.get("person") === name }, name))),
    h("input", { type: "text", name: "type", value: params.get("type") || "", placeholder: "type, e.g. FACT", "aria-label": "type", size: 14 }),
    h("select", { name: "status", "aria-label": "status" }, h("option", { value: "" }, "any status"),
      ["durable", "provisional", "expired", "rejected", "superseded", "forgotten"].map((name) => h("option", { value: name, selected: params.get("status") === name }, name))),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const name of ["person", "type", "status"]) if (form.elements[name].value) next.set(name, form.elements[name].value);
    location.hash = `#/timeline?${next}`;
  });
  const out = [h("h1", {}, "Timeline"), form];
  if (!data.days.length) out.push(h("p", { class: "muted" }, "Nothing on these days."));
  for (const group of data.days) {
    const counts = Object.entries(group.counts).map(([what, n]) => `${n} ${what}`).join(", ");
    out.push(h("section", { class: "day card", "data-day": group.day }, h("h2", {}, group.day, " ", h("span", { class: "meta" }, counts)),
      group.memories.map((entry) => h("div", { class: "entry", "data-id": entry.id, "data-what": entry.what },
        h("span", { class: "meta" }, entry.at.slice(11, 16)), badge(entry.what), h("span", { class: "text" }, entry.text),
        idLink(entry.id), entry.reason ? h("span", { class: "meta" }, `“${entry.reason}”`) : null)),
      group.left_out ? h("p", { class: "meta" }, `… and ${group.left_out} more on this day (filter by type or status to see them)`) : null,
      group.sessions.map((row) => h("div", { class: "entry session" }, h("span", { class: "meta" }, row.first.slice(11, 16)), badge("journal"),
        h("span", { class: "text" }, `session ${row.session || "(none)"}: ${row.turns} turns (${Object.entries(row.roles).map(([r, n]) => `${n} ${r}`).join(", ")})`)))));
  }
  if (data.more) out.push(h("p", { class: "muted" }, "Older days are left out (days=N shows more)."));
  return out;
}

// health -------------------------------------------------------------------------------------------
async function healthView() {
  const data = await api("/api/health");
  const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
  const out = [h("h1", {}, "Health")];
  out.push(h("h2", {}, "Doctor"), h("table", { id: "doctor" }, data.doctor.map((check) =>
    h("tr", {}, h("td", { class: check.status }, check.status), h("td", {}, check.name), h("td", {}, check.detail), h("td", { class: "id" }, check.fix || "")))));
  const verify = data.verify;
  out.push(h("h2", {}, "Verify"), h("p", { id: "verify", class: verify.clean ? "ok" : "problem" },
    verify.clean ? `clean: ${verify.lines} lines checked` : `${verify.problems.length} problems in ${verify.lines} lines`),
    verify.problems.map((p) => h("p", { class: "problem" }, p)), verify.warnings.map((w) => h("p", { class: "note" }, w)));
  out.push(h("h2", {}, "Index"), data.index ? h("table", { id: "index" }, Object.entries(data.index).map(([k, v]) =>
    h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "object" ? JSON.stringify(v) : String(v))))) : h("p", { class: "muted" }, "no index yet (memdir index builds it)"));
  out.push(h("h2", {}, "Last sleep"), data.last_sleep ? h("pre", {}, JSON.stringify(data.last_sleep, null, 2)) : h("p", { class: "muted" }, "sleep has not run"));
  out.push(h("h2", {}, "Sizes"), h("table", { id: "sizes" }, Object.entries(data.sizes).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, kb(v))))));
  return out;
}

// the router ----------------------------------------------------------------------------------------
let drawing = 0; // the latest route() call: an older one that answers late draws nothing

async function route() {
  const mine = ++drawing;
  const [path, query] = (location.hash.replace(/^#/, "") || "/review").split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const view = parts[0] || "review";
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("on", link.dataset.view === view);
  let content;
  try {
    if (view === "review") content = await reviewView();
    else if (view === "recall") content = await recallView(params);
    else if (view === "memory" && parts[1]) content = await memoryView(parts[1]);
    else if (view === "links" && parts[1]) content = await linksView(parts[1], params);
    else if (view === "timeline") content = await timelineView(params);
    else if (view === "health") content = await healthView();
    else content = [h("p", {}, "No such view.")];
  } catch (error) {
    content = [failed(error)];
  }
  if (mine !== drawing) return;
  main().replaceChildren(...content);
  document.body.dataset.view = view;
  document.body.dataset.ready = String(Date.now());
}

window.addEventListener("hashchange", () => { say(""); route(); });
window.addEventListener("DOMContentLoaded", route);
