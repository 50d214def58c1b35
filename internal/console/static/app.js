// The rath console: a single page over the JSON API (/api/). Model and
// tool text is only ever written with textContent or as an attribute
// value through setAttribute: never as markup.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="rath-csrf"]').getAttribute("content");
  // Live tools and forks run recorded work again: only a console started
  // with --allow-live offers them (the API refuses them otherwise).
  const liveAllowed = document.querySelector('meta[name="rath-live"]').getAttribute("content") === "on";
  // Who read a run is an admin's (GET /api/runs/{id}/access): the page
  // of anyone else neither shows the panel nor asks.
  const adminAllowed = document.querySelector('meta[name="rath-admin"]').getAttribute("content") === "on";
  const main = document.getElementById("main");
  const statusLine = document.getElementById("status");
  let cleanup = []; // timers and streams of the current page

  // visible shows control characters (terminal escapes) as \xNN, and
  // the bidi controls and line separators that would reorder what is
  // drawn as \uNNNN (the server escapes approval requests fully; this
  // covers every other text).
  function visible(s) {
    return String(s).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g,
      (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"))
      .replace(/[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
        (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  }

  // el builds an element; string children become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "onclick") e.addEventListener("click", v);
      else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(visible(c)));
    }
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = visible(text);
    return e;
  }

  // scroll wraps a table so that a narrow window scrolls it sideways
  // instead of widening the page.
  function scroll(table) {
    return el("div", { class: "table-scroll" }, table);
  }

  function clip(s, n) {
    s = String(s);
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  // duration says a time in ms in words: under a second in ms (a tenth
  // of one under 10 ms), so a 15 ms tool call never reads "0 s".
  function duration(ms) {
    if (!ms || ms < 0) return "0 ms";
    if (ms < 10) return (Math.round(ms * 10) / 10) + " ms";
    if (ms < 1000) return Math.round(ms) + " ms";
    const s = ms / 1000;
    if (s < 120) return s.toFixed(1) + " s";
    const m = Math.floor(s / 60);
    return m < 120 ? m + " min " + Math.round(s % 60) + " s" : Math.floor(m / 60) + " h " + (m % 60) + " min";
  }

  // ago is how long before now an RFC 3339 time was, in words.
  function ago(iso) {
    const t = Date.parse(iso);
    if (isNaN(t)) return String(iso);
    const s = Math.round((Date.now() - t) / 1000);
    if (s < 5) return "just now";
    if (s < 90) return s + " s ago";
    if (s < 5400) return Math.round(s / 60) + " min ago";
    if (s < 129600) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " days ago";
  }

  async function api(path, opts) {
    opts = opts || {};
    const headers = { "Accept": "application/json" };
    if (opts.method && opts.method !== "GET") headers["X-Rath-CSRF"] = csrf;
    let body0;
    if (opts.body !== undefined) { headers["Content-Type"] = "application/json"; body0 = JSON.stringify(opts.body); }
    const res = await fetch(path, { method: opts.method || "GET", headers, body: body0, credentials: "same-origin" });
    let body;
    try { body = await res.json(); } catch (e) { body = { error: "bad answer: " + res.status }; }
    if (res.status === 401 && res.headers.get("X-Rath-Sign-In")) {
      // The session ended (expired, or signed out elsewhere): sign in
      // again and come back here.
      location.assign(res.headers.get("X-Rath-Sign-In") + "?next=" + encodeURIComponent(location.pathname + location.hash));
    }
    if (!res.ok) {
      const err = new Error(body.error || res.statusText);
      err.status = res.status;
      throw err;
    }
    return body;
  }

  function fail(err) {
    statusLine.textContent = visible(err.message || String(err));
    statusLine.className = "error";
  }

  function ok(text) {
    statusLine.textContent = text || "";
    statusLine.className = "muted";
  }

  function statusCell(status, error) {
    return el("td", { class: "status status-" + status, title: error ? visible(error) : null }, status);
  }

  function runLink(id) {
    return el("a", { href: "#/run/" + encodeURIComponent(id) }, id);
  }

  function sessionLink(id) {
    return id ? el("a", { href: "#/session/" + encodeURIComponent(id) }, id) : "–";
  }

  // ---- runs list ----------------------------------------------------

  const runsState = { status: "", q: "", since: "" };

  function runsPage() {
    const statusSel = el("select", { id: "filter-status", "aria-label": "status" });
    const sinceSel = el("select", { id: "filter-since", "aria-label": "started within" },
      ...[["", "any time"], ["1h", "last hour"], ["24h", "last 24 h"], ["7d", "last 7 days"], ["30d", "last 30 days"]].map(([v, t]) => {
        const o = el("option", { value: v }, t);
        if (v === runsState.since) o.selected = true;
        return o;
      }));
    const statuses = ["", "running", "waiting", "queued", "done", "failed", "canceled"];
    // statusOptions names each status with its count; the options stay
    // (a refresh does not close an open dropdown), only their text moves.
    function statusOptions(counts) {
      const label = (st) => {
        const n = counts ? (st ? counts[st] || 0 : Object.values(counts).reduce((x, y) => x + y, 0)) : null;
        return (st || "any status") + (n !== null ? " (" + n + ")" : "");
      };
      if (statusSel.options.length === statuses.length) {
        statuses.forEach((st, i) => { statusSel.options[i].textContent = label(st); });
        return;
      }
      statusSel.replaceChildren(...statuses.map((st) => {
        const o = el("option", { value: st }, label(st));
        if (st === runsState.status) o.selected = true;
        return o;
      }));
    }
    statusOptions(null);
    const countsLine = el("span", { id: "runs-counts", class: "muted" });
    const q = el("input", { id: "filter-q", type: "search", placeholder: "search id, workflow, session, error", size: 40 });
    q.value = runsState.q;
    const body = el("tbody", { id: "runs-body" });
    const more = el("button", { id: "runs-older", hidden: true }, "Older runs");
    const costHead = el("th", { class: "num", hidden: true }, "cost");
    const table = el("table", { id: "runs" },
      el("thead", {}, el("tr", {}, el("th", {}, "run"), el("th", {}, "status"), el("th", {}, "workflow"), el("th", {}, "model"), el("th", {}, "started"),
        el("th", { class: "num" }, "duration"), el("th", { class: "num" }, "tokens"), costHead, el("th", { class: "num" }, "tool calls"),
        el("th", {}, "worker"))),
      body);
    main.replaceChildren(el("h1", {}, "Runs"), el("div", { class: "filters" }, statusSel, sinceSel, q, countsLine), scroll(table), el("p", {}, more));
    let nextBefore = 0, priced = false;

    function row(r) {
      // No prompt: the list reads no run's content (the run page does,
      // and records who read it).
      const what = el("td", { class: "what" }, el("div", { class: "payload" }, r.workflow));
      if (r.error) what.append(el("div", { class: "error small" }, clip(r.error, 200)));
      return el("tr", { "data-run": r.id },
        el("td", { class: "mono" }, runLink(r.id), r.parent_run ? el("div", { class: "muted small" }, "fork of ", runLink(r.parent_run)) : null),
        statusCell(r.status, r.error), what, el("td", { class: "mono" }, (r.models || []).join(", ") || "–"),
        el("td", { title: r.started_at }, ago(r.started_at)), el("td", { class: "num" }, duration(r.duration_ms)),
        el("td", { class: "num" }, String(r.usage.total_tokens)),
        priced ? el("td", { class: "num cost" }, r.cost !== undefined && r.cost !== null ? r.cost.toFixed(4) : "–") : null,
        el("td", { class: "num" }, String(r.tool_calls)), el("td", { class: "mono" }, r.worker || "–"));
    }

    function query(before) {
      const p = new URLSearchParams({ limit: "50" });
      if (runsState.status) p.set("status", runsState.status);
      if (runsState.q) p.set("q", runsState.q);
      if (runsState.since) p.set("since", runsState.since);
      if (before) p.set("before", String(before));
      return "/api/runs?" + p.toString();
    }

    // refresh reloads the first page: new runs appear without a reload.
    async function refresh() {
      try {
        const page = await api(query(0));
        priced = !!page.priced;
        costHead.hidden = !priced;
        statusOptions(page.counts);
        countsLine.textContent = Object.entries(page.counts || {}).map(([k, v]) => v + " " + k).join(" · ");
        const shown = body.children.length;
        const rows = page.runs.map(row);
        if (shown > rows.length && nextBefore) {
          // Keep the older pages the user opened below the new first page.
          const keep = Array.from(body.children).slice(rows.length);
          const ids = new Set(page.runs.map((r) => r.id));
          body.replaceChildren(...rows, ...keep.filter((tr) => !ids.has(tr.getAttribute("data-run"))));
        } else {
          body.replaceChildren(...rows);
          nextBefore = page.next_before || 0;
        }
        more.hidden = !nextBefore;
        if (!page.runs.length) body.replaceChildren(el("tr", {}, el("td", { colspan: 10, class: "muted" }, "No runs match.")));
        ok("updated " + new Date().toLocaleTimeString());
      } catch (e) { fail(e); }
    }

    more.addEventListener("click", async () => {
      try {
        const page = await api(query(nextBefore));
        body.append(...page.runs.map(row));
        nextBefore = page.next_before || 0;
        more.hidden = !nextBefore;
      } catch (e) { fail(e); }
    });
    statusSel.addEventListener("change", () => { runsState.status = statusSel.value; nextBefore = 0; refresh(); });
    sinceSel.addEventListener("change", () => { runsState.since = sinceSel.value; nextBefore = 0; refresh(); });
    let typing;
    q.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => { runsState.q = q.value; nextBefore = 0; refresh(); }, 250);
    });
    refresh();
    // A hidden tab does not poll.
    const timer = setInterval(() => { if (!document.hidden) refresh(); }, 3000);
    cleanup.push(() => clearInterval(timer));
  }

  // ---- run page -----------------------------------------------------

  function card(k, v, id) {
    return el("div", { class: "card" }, el("div", { class: "k" }, k), el("div", { class: "v", id: id }, v));
  }

  function runCards(r) {
    return el("div", { class: "cards", id: "run-cards" },
      card("status", r.status, "run-status"), card("workflow", r.workflow), card("started", r.started_at),
      card("duration", duration(r.duration_ms)),
      card("tokens", r.usage.total_tokens + " (" + r.usage.prompt_tokens + " prompt, " + r.usage.completion_tokens + " completion)"),
      card("model calls", String(r.usage.calls)), card("tool calls", String(r.tool_calls)), card("events", String(r.events)),
      card("worker", r.worker || "–"),
      el("div", { class: "card" }, el("div", { class: "k" }, "input"), el("div", { class: "v mono" }, sessionLink(r.input_session))),
      el("div", { class: "card" }, el("div", { class: "k" }, "output"), el("div", { class: "v mono" }, sessionLink(r.output_session))),
      r.parent_run ? el("div", { class: "card" }, el("div", { class: "k" }, "forked from"), el("div", { class: "v mono", id: "run-parent" }, runLink(r.parent_run))) : null,
      r.error ? card("error", r.error) : null);
  }

  // gist is a one-line reading of an event's payload for the common
  // types; the full JSON stays one click away.
  function gist(ev) {
    const p = ev.payload || {};
    const u = p.usage ? " (" + p.usage.total_tokens + " tokens)" : "";
    switch (ev.type) {
      case "run.started": return "workflow " + p.workflow + " on " + p.input_session;
      case "run.finished": return p.status + (p.error ? ": " + p.error : "") + (p.output_session ? " → " + p.output_session : "");
      case "workflow.entered": return "enter " + p.path;
      case "workflow.exited": return "exit " + p.path + (p.error ? ": " + p.error : "");
      case "chunk.appended": {
        const c = p.chunk || {};
        const calls = (c.tool_calls || []).map((tc) => tc.name + "(" + (tc.arguments || "") + ")").join(", ");
        return "#" + p.index + " " + c.role + (c.author ? " by " + c.author : "") + ": " + (c.content || "") + (calls ? " → " + calls : "");
      }
      case "tool.called": return (p.agent ? p.agent + " calls " : "") + p.tool + "(" + (p.arguments || "") + ")";
      case "tool.returned": return p.tool + " returned " + p.output_size + " bytes in " + (p.duration_ms ? p.duration_ms + " ms" : "under 1 ms") + (p.is_error || p.error ? ", an error: " + (p.error || p.error_kind || "") : "");
      case "provider.called": return (p.agent || "") + " → " + (p.model || p.provider || "model") + u + (p.latency_ms ? " in " + p.latency_ms + " ms" : "");
      case "provider.failed": return (p.agent || "") + " → " + (p.model || p.provider || "model") + " failed (" + (p.error_kind || "") + "): " + (p.error || "") + (p.will_retry ? ", will retry" : "");
      case "session.created": return "new session" + (p.origin ? " (" + p.origin + ")" : "");
      case "session.forked": return "fork of " + p.source + " v" + p.source_version;
      case "selector.decided": return "chose " + p.chosen + (p.reason ? ": " + p.reason : "");
      case "approval.requested": return (p.agent ? p.agent + " asks a person" : "asks a person") + (p.kind === "tool" ? " to approve " + p.tool + "(" + (p.arguments || "") + ")" : ": " + (p.question || ""));
      case "approval.decided": return p.decision + " by " + p.by + (p.edited_arguments ? ", arguments edited to " + p.edited_arguments : "") + (p.note ? ": " + p.note : "");
    }
    return null;
  }

  // eventAgent is the agent (module path) an event belongs to, if any.
  function eventAgent(ev) {
    const p = ev.payload || {};
    return p.agent || (ev.type.startsWith("workflow.") ? p.path : "") || "";
  }

  // eventRow is one event: its gist (the full JSON one click away, or
  // shown whole in the JSON view) and a button to fork the run there.
  function eventRow(ev, fresh, asJSON, onFork) {
    const text = JSON.stringify(ev.payload);
    const line = gist(ev);
    let payload;
    if (asJSON) payload = el("pre", { class: "mono payload json" }, JSON.stringify(ev.payload, null, 2));
    else if (line !== null || text.length > 160) {
      payload = el("details", {}, el("summary", { class: line !== null ? "" : "mono" }, clip(line !== null ? line : text, 200)),
        el("pre", { class: "mono payload json" }, JSON.stringify(ev.payload, null, 2)));
    } else payload = el("span", { class: "mono payload" }, text);
    const fork = onFork ? el("button", { class: "fork-at small", title: "Fork here: a new run replays this one up to this event, then calls the model and tools live" }, "fork…") : "";
    if (onFork) fork.addEventListener("click", () => onFork(ev.seq, fork));
    return el("tr", { "data-seq": ev.seq, id: "ev-" + ev.seq, class: fresh ? "new" : null },
      el("td", { class: "num mono" }, String(ev.seq)), el("td", { class: "mono", title: ev.at }, ev.at.replace(/^.*T/, "").replace(/(\.\d{3})\d*Z$/, "$1")),
      el("td", { class: "mono" }, ev.type), el("td", { class: "mono" }, ev.stream + "@" + ev.version), el("td", {}, payload), el("td", {}, fork));
  }

  function verdictBox(kind, v, toEvent) {
    const box = el("div", { class: "verdict " + (v.ok ? "ok" : "bad"), id: kind + "-verdict" });
    if (kind === "replay") {
      const mode = v.live_tools ? " (tools run live)" : "";
      if (v.ok) {
        box.append(el("strong", {}, "Reproduced"), " " + v.matched + " of " + v.recorded + " events (" + v.answered + " answers from the record)" + mode);
      } else {
        const d = v.divergence;
        const at = el("a", { href: "#", class: "to-event", "data-seq": d.seq }, "seq " + d.seq);
        at.addEventListener("click", (e) => { e.preventDefault(); toEvent(d.seq); });
        box.append(el("strong", {}, "Diverged"), " after " + v.matched + " of " + v.recorded + " events" + mode + ": " + d.class + " at ", at,
          ", " + d.type + " on " + d.stream + " v" + d.version + "\n", "hint: " + d.hint + "\n");
        if (d.want) box.append("want: ", el("span", { class: "mono" }, d.want), "\n");
        if (d.got) box.append("got:  ", el("span", { class: "mono" }, d.got), "\n");
        if (d.diff) box.append(el("div", { class: "mono" }, d.diff));
      }
    } else if (v.ok) {
      box.append(el("strong", {}, "Verified"), " " + v.events + " events, " + v.blobs + " blobs; head " + (v.head || "(empty)") +
        (v.projections ? "; projections equal a rebuild" : ""));
    } else {
      box.append(el("strong", {}, "Verification failed"), (v.failed_seq ? " at seq " + v.failed_seq : "") + ": " + v.failure);
    }
    return box;
  }

  // chunkBox is one transcript entry (a session's chunk, or a message of
  // a model request).
  function chunkBox(c, index) {
    let head = (index !== undefined ? "#" + index + " " : "") + c.role;
    if (c.name) head += " " + c.name;
    if (c.tool_call_id) head += " for call " + c.tool_call_id;
    if (c.author) head += " by " + c.author;
    const box = el("div", { class: "chunk role-" + c.role }, el("div", { class: "head" }, head));
    if (c.content) box.append(el("div", { class: "body" }, c.content));
    for (const tc of c.tool_calls || []) box.append(el("div", { class: "toolcall" }, "→ call " + tc.id + " " + tc.name + " " + (tc.arguments || "")));
    return box;
  }

  const spanLabel = (s) => {
    let t = s.name;
    if (s.attempts > 1) t += " · " + s.attempts + " attempts";
    if (s.kind === "approval") t += " · " + (s.attrs.status === "pending" ? "waiting" : s.attrs.status + (s.attrs.by ? " by " + s.attrs.by : ""));
    else if (s.incomplete) t += " · no end recorded";
    if (s.error) t += " · " + s.error;
    return t;
  };

  // waterfall draws the trace as nested, timed bars: one row per span in
  // the tree's depth-first order, indented by depth, placed on the run's
  // time axis. Failed attempts of a model call are ticks on its bar; a
  // wait for a person is a hatched bar. Clicking a model call opens it in
  // the inspector.
  function waterfall(tr, onCall) {
    if (!tr.spans.length) return el("p", { class: "muted" }, "No spans (the run recorded no workflow events).");
    const total = Math.max(tr.total_ms, 1);
    const box = el("div", { class: "waterfall", id: "waterfall" },
      el("div", { class: "wf-row wf-axis" }, el("div", { class: "wf-label" }, "span"),
        el("div", { class: "wf-track" }, el("span", {}, "0"), el("span", { class: "wf-end" }, duration(total)))));
    for (const s of tr.spans) {
      const bar = el("div", { class: "wf-bar kind-" + s.kind + (s.error ? " failed" : "") + (s.incomplete ? " open" : ""),
        title: Object.entries(s.attrs || {}).map(([k, v]) => k + ": " + v).join("\n") || null });
      bar.style.left = (s.start_ms / total * 100).toFixed(3) + "%";
      bar.style.width = Math.max((s.end_ms - s.start_ms) / total * 100, 0.4).toFixed(3) + "%";
      for (const m of s.marks || []) {
        const tick = el("span", { class: "wf-mark " + (m.name.includes("failed") ? "bad" : ""), title: m.name + "\n" + Object.entries(m.attrs || {}).map(([k, v]) => k + ": " + v).join("\n") });
        const span = Math.max(s.end_ms - s.start_ms, 0.001);
        tick.style.left = Math.min(Math.max((m.at_ms - s.start_ms) / span * 100, 0), 100).toFixed(2) + "%";
        bar.append(tick);
      }
      const label = el("div", { class: "wf-label" }, el("span", { class: "wf-kind" }, s.kind), " " + spanLabel(s));
      label.style.paddingLeft = (0.3 + s.depth * 1.1) + "rem";
      const row = el("div", { class: "wf-row", "data-span": s.id, "data-parent": s.parent || "", "data-depth": s.depth, "data-kind": s.kind,
        "data-start": s.start_ms, "data-end": s.end_ms, "data-seq": s.seq || "", "data-end-seq": s.end_seq || "" },
        label, el("div", { class: "wf-track" }, bar), el("div", { class: "wf-dur num mono" }, duration(s.end_ms - s.start_ms)));
      if (s.kind === "chat" && s.end_seq) {
        row.classList.add("clickable");
        row.setAttribute("tabindex", "0");
        row.addEventListener("click", () => onCall(s.end_seq, row));
        row.addEventListener("keydown", (e) => { if (e.key === "Enter") onCall(s.end_seq, row); });
      }
      box.append(row);
    }
    return box;
  }

  // agentsTable is the per-agent usage, as in the dossier.
  function agentsTable(agents) {
    if (!agents.length) return el("p", { class: "muted" }, "No model calls.");
    return scroll(el("table", { id: "agents" },
      el("thead", {}, el("tr", {}, el("th", {}, "agent"), el("th", { class: "num" }, "calls"), el("th", { class: "num" }, "failed attempts"),
        el("th", { class: "num" }, "prompt"), el("th", { class: "num" }, "completion"), el("th", { class: "num" }, "total tokens"), el("th", { class: "num" }, "latency"))),
      el("tbody", {}, ...agents.map((a) => el("tr", {}, el("td", { class: "mono" }, a.agent || "–"), el("td", { class: "num" }, String(a.calls)),
        el("td", { class: "num" }, String(a.failures)), el("td", { class: "num" }, String(a.usage.prompt_tokens)),
        el("td", { class: "num" }, String(a.usage.completion_tokens)), el("td", { class: "num" }, String(a.usage.total_tokens)),
        el("td", { class: "num" }, duration(a.latency_ms)))))));
  }

  // inspectorView shows one model call: its attempts, the request's
  // messages (those the previous call already sent folded), the response.
  function inspectorView(v) {
    const c = v.call;
    const box = el("div", { class: "inspector", id: "inspector-call", "data-seq": c.seq },
      el("h3", {}, "Model call · seq " + c.seq + (c.agent ? " · " + c.agent : "")),
      el("div", { class: "cards" }, card("model", c.model || c.provider || "–"), card("provider", c.provider || "–"),
        card("tokens", c.usage.total_tokens + " (" + c.usage.prompt_tokens + " prompt, " + c.usage.completion_tokens + " completion)"),
        card("latency", duration(c.latency_ms)), card("attempt", String(c.attempt) + (v.attempts.length ? " (" + v.attempts.length + " failed before)" : "")),
        c.response && c.response.finish_reason ? card("finish", c.response.finish_reason) : null));
    if (v.attempts.length) {
      const ul = el("ul", { class: "attempts" });
      for (const a of v.attempts) ul.append(el("li", {}, "attempt " + a.attempt + " failed after " + duration(a.latency_ms) + " (" + (a.error_kind || "error") + "): " + (a.error || "") + (a.will_retry ? ", retried" : "")));
      box.append(el("h4", {}, "Retries"), ul);
    }
    if (c.failed) box.append(el("div", { class: "verdict bad" }, "This call failed (" + (c.error_kind || "") + "): " + (c.error || "")));
    const req = c.request;
    box.append(el("h4", {}, "Request"));
    if (!req) box.append(el("p", { class: "muted" }, "The request was not recorded (its blobs are missing)."));
    else {
      const msgs = el("div", { class: "messages" });
      const shared = c.shared_prefix || 0;
      // Fold what the previous call sent already, unless that is all of it.
      if (shared > 0 && shared < req.messages.length) {
        const fold = el("details", {}, el("summary", { class: "muted" }, shared + " earlier messages, as in the previous call"));
        req.messages.slice(0, shared).forEach((m, i) => fold.append(chunkBox(m, i)));
        msgs.append(fold);
      }
      const from = shared < req.messages.length ? shared : 0;
      req.messages.slice(from).forEach((m, i) => msgs.append(chunkBox(m, from + i)));
      box.append(msgs);
      if ((req.tools || []).length) box.append(el("p", { class: "muted" }, "tools offered: " + req.tools.map((t) => t.name).join(", ")));
    }
    box.append(el("h4", {}, "Response"));
    if (c.response) box.append(chunkBox({ role: "assistant", content: c.response.content, tool_calls: c.response.tool_calls }));
    else if (!c.failed) box.append(el("p", { class: "muted" }, "The response was not recorded."));
    return box;
  }

  // approvalRow is one request a person decides on, as the run page and
  // the inbox show it: who asks and how long ago, its arguments one field
  // at a time as the server escaped them (a.shown: bidi controls and
  // invisible characters drawn as \u2067, nothing cut, a warning when
  // anything was escaped; the raw a.arguments is never drawn), an editor
  // for the arguments to run instead, and approve / reject, or an answer
  // for a question. The decision records the signed-in identity; after
  // runs once it is recorded.
  function approvalRow(a, after, withRun) {
    const sh = a.shown || {};
    const row = el("div", { class: "approval", "data-id": a.id });
    row.append(el("div", { class: "head" }, el("span", { class: "mono" }, a.id),
      withRun ? " · " : "", withRun ? (a.run ? runLink(a.run) : "no run") : "",
      " · " + a.kind + (a.tool ? " · " + a.tool : "") + (a.agent ? " · " + a.agent : ""),
      " · ", el("span", { class: "age", title: a.requested_at }, "asked " + ago(a.requested_at)),
      a.deadline ? " · deadline " + a.deadline + " (default: " + a.default + ")" : ""));
    if (sh.warning) row.append(el("div", { class: "warning" }, "⚠ " + sh.warning));
    if (a.kind === "question") row.append(el("div", { class: "payload" }, sh.question || ""));
    for (const f of sh.fields || []) row.append(el("div", { class: "field" }, f.name ? el("span", { class: "fname mono" }, f.name + ": ") : "", el("span", { class: "payload mono" }, f.value)));
    if (sh.reason) row.append(el("div", { class: "muted" }, "why: " + sh.reason));
    const note = el("input", { class: "note", placeholder: a.kind === "question" ? "note" : "note, or the reason for a rejection", size: 40 });
    async function decide(body) {
      try {
        const r = await api("/api/approvals/" + encodeURIComponent(a.id), { method: "POST", body });
        row.replaceChildren(el("div", { class: "verdict ok decided" }, r.decided.decision + (r.decided.edited_arguments ? " with edited arguments" : "") + " by " + r.decided.by + " — " + r.next));
        ok("");
        if (after) after();
      } catch (e) { fail(e); }
    }
    if (a.kind === "question") {
      const send = el("button", { class: "answer-go" }, "Answer");
      const form = answerForm(a.schema);
      let read;
      if (form) {
        row.append(el("div", { class: "answer-form" }, ...form.labels));
        read = form.read;
      } else {
        if (a.schema !== undefined) row.append(el("div", { class: "field" }, el("span", { class: "fname" }, "answer's schema: "), el("span", { class: "payload mono" }, JSON.stringify(a.schema))));
        const answer = el("input", { class: "answer", placeholder: "answer as JSON", size: 40 });
        row.append(el("div", { class: "filters" }, answer));
        read = () => {
          try { return JSON.parse(answer.value); } catch (e) { throw new Error("The answer must be JSON: " + e.message); }
        };
      }
      send.addEventListener("click", () => {
        let parsed;
        try { parsed = read(); } catch (e) { fail(e); return; }
        decide({ decision: "answer", answer: parsed, note: note.value });
      });
      row.append(el("div", { class: "filters" }, note, send));
    } else {
      const original = a.arguments !== undefined ? JSON.stringify(a.arguments, null, 2) : "";
      const edit = el("textarea", { class: "edit-args mono", rows: Math.min(12, original.split("\n").length + 1), cols: 70, spellcheck: "false", "aria-label": "arguments to run" });
      edit.value = original;
      const approve = el("button", { class: "approve" }, "Approve");
      const reject = el("button", { class: "reject" }, "Reject");
      approve.addEventListener("click", () => {
        const body = { decision: "approve", note: note.value };
        if (edit.value.trim() !== original.trim()) {
          try { body.arguments = JSON.parse(edit.value); } catch (e) { fail(new Error("The edited arguments must be JSON: " + e.message)); return; }
        }
        decide(body);
      });
      reject.addEventListener("click", () => decide({ decision: "reject", note: note.value }));
      row.append(el("details", { class: "edit" }, el("summary", {}, "Edit the arguments before approving"), edit),
        el("div", { class: "filters" }, note, approve, reject));
    }
    return row;
  }

  // answerForm is a question's answer as a form when its schema is an
  // object of strings, numbers, integers and booleans (what an MCP
  // server's form asks for): an input a field, the required ones first,
  // a choice a select; null for any other schema. Field names,
  // descriptions and choices come from a model or a server: el draws
  // them as text, escaped (visible). read returns the answer, or throws what
  // is missing or not a number; the server checks it against the schema.
  function answerForm(schema) {
    const prim = ["string", "integer", "number", "boolean"];
    const props = schema && schema.type === "object" && schema.properties;
    if (!props || typeof props !== "object") return null;
    const names = Object.keys(props);
    if (names.length === 0 || names.some((n) => !props[n] || !prim.includes(props[n].type))) return null;
    const required = [...new Set((schema.required || []).filter((n) => names.includes(n)))];
    const order = [...required, ...names.filter((n) => !required.includes(n)).sort()];
    const fields = order.map((name) => {
      const p = props[name], req = required.includes(name);
      let input;
      if (Array.isArray(p.enum) || p.type === "boolean") {
        const choices = Array.isArray(p.enum) ? p.enum : [true, false];
        input = el("select", { class: "answer-field", "data-field": name },
          el("option", { value: "" }, req ? "choose" : "leave out"),
          ...choices.map((c, i) => el("option", { value: String(i) }, String(c))));
        input.choice = choices;
      } else {
        input = el("input", { class: "answer-field", "data-field": name, type: p.type === "string" ? "text" : "number", step: p.type === "integer" ? "1" : "any", size: 30 });
      }
      const label = el("label", { class: "answer-label" }, el("span", { class: "mono" }, name),
        " (" + p.type + (req ? ", required" : "") + ")" + (p.description ? " " + p.description : "") + " ", input);
      return { name, p, req, input, label };
    });
    function read() {
      const out = {};
      for (const f of fields) {
        const v = f.input.value;
        if (v === "") {
          if (f.req) throw new Error(f.name + " is required");
          continue;
        }
        if (f.input.choice) out[f.name] = f.input.choice[Number(v)];
        else if (f.p.type === "string") out[f.name] = v;
        else {
          const n = Number(v);
          if (!Number.isFinite(n)) throw new Error(f.name + " is not a number");
          out[f.name] = n;
        }
      }
      return out;
    }
    return { labels: fields.map((f) => f.label), read };
  }

  // waitingBox is the banner of a run that waits for a person: each
  // request, decided here.
  function waitingBox(id, pending, after) {
    const box = el("div", { class: "waiting", id: "waiting" },
      el("strong", {}, "This run waits for a person"), " — " + pending.length + " request" + (pending.length > 1 ? "s" : "") + ". Decide here; a worker (or Resume) then goes on.");
    for (const a of pending) box.append(approvalRow(a, after, false));
    return box;
  }

  // accessTable lists a run's access records, oldest first: who read
  // what of it, for which tenant, when and through which route (names
  // come from identities and tokens: el shows them as text).
  function accessTable(records) {
    if (!records.length) return el("p", { class: "muted", id: "access-none" }, "Nobody has read this run's content through the console or the API.");
    const what = (r) => r.what + (r.from_seq ? " seq " + r.from_seq + (r.to_seq && r.to_seq !== r.from_seq ? "–" + r.to_seq : "") : "") + (r.namespace ? " in " + r.namespace : "");
    return scroll(el("table", { id: "access-records" },
      el("thead", {}, el("tr", {}, el("th", {}, "who"), el("th", {}, "tenant"), el("th", {}, "what"), el("th", {}, "when"), el("th", {}, "route"))),
      el("tbody", {}, ...records.map((r) => el("tr", { "data-seq": r.seq },
        el("td", { class: "mono who" }, r.who, r.issuer ? el("div", { class: "muted small" }, r.issuer) : null),
        el("td", {}, r.tenant || "–"), el("td", {}, what(r)),
        el("td", { title: r.at }, ago(r.at)), el("td", { class: "mono" }, r.route))))));
  }

  // runPage shows a run; ?seqs=S,T (the events a score read) marks
  // those events and scrolls to the first.
  async function runPage(id, params) {
    const enc = encodeURIComponent(id);
    main.replaceChildren(el("h1", {}, "Run ", el("span", { class: "mono" }, id)), el("p", { class: "muted" }, "Loading…"));
    let run;
    const gen = generation;
    try { run = await api("/api/runs/" + enc); } catch (e) {
      if (gen !== generation) return;
      if (e.status === 404) {
        main.replaceChildren(el("h1", {}, "Run ", el("span", { class: "mono" }, id)),
          el("div", { class: "verdict bad", id: "not-found" }, el("strong", {}, "No such run"), " in this store: " + e.message),
          el("p", {}, el("a", { href: "#/" }, "← all runs")));
        ok("");
        return;
      }
      fail(e);
      main.replaceChildren(el("h1", {}, "Run ", el("span", { class: "mono" }, id)), el("p", { class: "error", id: "load-error" }, "Could not load the run."));
      return;
    }
    if (gen !== generation) return;
    const liveBadge = el("span", { class: "live", id: "live", hidden: true }, "LIVE");
    const waiting = el("div", { id: "waiting-box" });
    const verdicts = el("div", { id: "verdicts" });
    const replayBtn = el("button", { id: "replay", title: "Replay against the record: model and tool answers come from the log" }, "Replay");
    const replayLiveBtn = el("button", { id: "replay-live", title: "Replay with the tools run again for real, each in a fresh copy of its workspace" }, "Replay with live tools");
    replayLiveBtn.hidden = !liveAllowed;
    const verifyBtn = el("button", { id: "verify" }, "Verify store");
    const resumeBtn = el("button", { id: "resume", title: "Go on with a stopped run no worker owns" }, "Resume");
    const cancelBtn = el("button", { id: "cancel", title: "Cancel a run submitted to the fleet" }, "Cancel");
    const dossierView = el("a", { href: "/api/runs/" + enc + "/dossier?view=1&verify=0", target: "_blank", rel: "noopener", id: "dossier-view" }, "View dossier");
    const dossier = el("a", { href: "/api/runs/" + enc + "/dossier", download: "" }, "Download dossier");
    async function action(btn, kind, path) {
      btn.disabled = true;
      try { verdicts.replaceChildren(verdictBox(kind, Object.assign(await api(path, { method: "POST" }), { live_tools: path.includes("live_tools") }), showEvent)); ok(""); } catch (e) { fail(e); }
      btn.disabled = false;
    }
    async function start(btn, path, body, what) {
      btn.disabled = true;
      try {
        const r = await api(path, { method: "POST", body: body || {} });
        ok(what + " " + r.run);
        if (r.run !== id) location.hash = "#/run/" + encodeURIComponent(r.run);
        else { refreshRun(); tail(); }
      } catch (e) { fail(e); }
      btn.disabled = false;
    }
    replayBtn.addEventListener("click", () => action(replayBtn, "replay", "/api/runs/" + enc + "/replay"));
    replayLiveBtn.addEventListener("click", () => action(replayLiveBtn, "replay", "/api/runs/" + enc + "/replay?live_tools=1"));
    verifyBtn.addEventListener("click", () => action(verifyBtn, "verify", "/api/verify"));
    resumeBtn.addEventListener("click", () => start(resumeBtn, "/api/runs/" + enc + "/resume", null, "resuming"));
    cancelBtn.addEventListener("click", () => start(cancelBtn, "/api/runs/" + enc + "/cancel", { reason: "canceled from the console" }, "canceled"));
    // Only what the run's state allows is offered (the server refuses the rest).
    function offer() {
      const acts = run.actions || {};
      resumeBtn.hidden = !acts.resume;
      cancelBtn.hidden = !acts.cancel;
    }
    offer();
    if (run.replay) verdicts.replaceChildren(verdictBox("replay", run.replay, showEvent));
    const traceBox = el("div", { id: "trace" }, el("p", { class: "muted" }, "Loading the trace…"));
    const agentsBox = el("div", { id: "agents-box" });
    const inspector = el("div", { id: "inspector" }, el("p", { class: "muted" }, "Click a model call (chat) in the waterfall to inspect it."));
    const graphBox = el("div", { id: "graph" }, el("p", { class: "muted" }, "Loading the graph…"));
    const toolsBox = el("div", { id: "tools" }, el("p", { class: "muted" }, "Loading the tool calls…"));
    const typeSel = el("select", { id: "events-type", "aria-label": "event type" }, el("option", { value: "" }, "any type"));
    const agentSel = el("select", { id: "events-agent", "aria-label": "agent" }, el("option", { value: "" }, "any agent"));
    const jsonBox = el("input", { type: "checkbox", id: "events-json" });
    const evBody = el("tbody", { id: "events-body" });
    const accessBox = el("div", { id: "access" }, el("p", { class: "muted" }, "Loading who read this run…"));
    const moreBtn = el("button", { id: "events-more", hidden: true }, "More events");
    const evNote = el("p", { class: "muted", id: "events-note" });
    let cards = runCards(run);
    main.replaceChildren(
      el("h1", {}, "Run ", el("span", { class: "mono" }, id), liveBadge),
      waiting,
      cards,
      el("div", { class: "actions" }, replayBtn, replayLiveBtn, verifyBtn, resumeBtn, cancelBtn, dossierView, dossier),
      verdicts,
      el("h2", {}, "Trace"), traceBox,
      el("h2", {}, "Model call inspector"), inspector,
      el("h2", {}, "Usage per agent"), agentsBox,
      el("h2", {}, "Session graph"), graphBox,
      el("h2", {}, "Tool calls"), toolsBox,
      adminAllowed ? el("h2", {}, "Who read this run") : null, adminAllowed ? accessBox : null,
      el("h2", {}, "Events"),
      el("div", { class: "filters" }, typeSel, agentSel, el("label", {}, jsonBox, " JSON")), evNote,
      scroll(el("table", { id: "events" }, el("thead", {}, el("tr", {}, el("th", { class: "num" }, "seq"), el("th", {}, "at"), el("th", {}, "type"),
        el("th", {}, "stream"), el("th", {}, "what"), el("th", {}, ""))), evBody)),
      el("p", {}, moreBtn));

    let inspected = 0;
    async function inspect(seq, row) {
      inspected = seq;
      for (const r of document.querySelectorAll(".wf-row.selected")) r.classList.remove("selected");
      if (row) row.classList.add("selected");
      try { inspector.replaceChildren(inspectorView(await api("/api/runs/" + enc + "/calls/" + seq))); ok(""); } catch (e) { fail(e); }
    }
    function loadTrace() {
      api("/api/runs/" + enc + "/trace").then((tr) => {
        traceBox.replaceChildren(waterfall(tr, inspect));
        agentsBox.replaceChildren(agentsTable(tr.agents));
        if (inspected) { const r = traceBox.querySelector('.wf-row[data-end-seq="' + inspected + '"]'); if (r) r.classList.add("selected"); }
      }).catch(fail);
    }
    function loadWaiting() {
      if (!live()) { waiting.replaceChildren(); return; }
      api("/api/approvals?run=" + enc).then((v) => waiting.replaceChildren(v.length ? waitingBox(id, v, () => { loadTrace(); loadTools(); }) : "")).catch(fail);
    }
    const loadTools = () => api("/api/runs/" + enc + "/tools").then((v) => toolsBox.replaceChildren(...toolCalls(v.tools))).catch(fail);
    const loadGraph = () => Promise.all([api("/api/graph?run=" + enc), api("/api/graph/labels?run=" + enc)])
      .then(([g, labels]) => graphBox.replaceChildren(drawGraph(g, labels), el("p", {}, el("a", { href: "#/graph/" + enc }, "open the graph page (select two sessions to compare)")))).catch(fail);
    const loadAccess = () => adminAllowed && api("/api/runs/" + enc + "/access").then((v) => accessBox.replaceChildren(accessTable(v.records))).catch(fail);
    loadTrace(); loadGraph(); loadTools(); loadAccess();

    // The events: every loaded event is kept; the filters and the JSON
    // view redraw the rows from them.
    const all = [];
    const types = new Set(), agents = new Set();
    function matches(ev) {
      return (!typeSel.value || ev.type === typeSel.value) && (!agentSel.value || eventAgent(ev) === agentSel.value);
    }
    // forkAt asks first: a fork replays up to seq, then calls the model
    // and runs the tools for real.
    function forkAt(seq, btn) {
      const tr = btn.closest("tr");
      const old = document.getElementById("fork-confirm");
      if (old) old.remove();
      const yes = el("button", { class: "fork-go" }, "Fork and run live");
      const no = el("button", { class: "fork-no" }, "Cancel");
      const row = el("tr", { id: "fork-confirm" }, el("td", { colspan: 6 }, el("div", { class: "warning" },
        "Fork at seq " + seq + ": a new run replays this one up to here, then calls the model and runs the tools live (they may cost money and change files). ", yes, " ", no)));
      no.addEventListener("click", () => row.remove());
      yes.addEventListener("click", () => { row.remove(); forkLive(seq, btn); });
      tr.after(row);
    }
    async function forkLive(seq, btn) {
      btn.disabled = true;
      try {
        const r = await api("/api/runs/" + enc + "/fork", { method: "POST", body: { seq } });
        ok("forked at seq " + seq + " as " + r.run);
        location.hash = "#/run/" + encodeURIComponent(r.run);
      } catch (e) { fail(e); btn.disabled = false; }
    }
    function addEvent(ev, fresh) {
      all.push(ev);
      for (const [set, sel, v] of [[types, typeSel, ev.type], [agents, agentSel, eventAgent(ev)]]) {
        if (v && !set.has(v)) { set.add(v); sel.append(el("option", { value: v }, v)); }
      }
      if (matches(ev)) evBody.append(eventRow(ev, fresh, jsonBox.checked, forker()));
    }
    // A fork is offered only where the server allows live runs.
    const forker = () => (run.actions && run.actions.fork ? forkAt : null);
    function redraw() { evBody.replaceChildren(...all.filter(matches).map((ev) => eventRow(ev, false, jsonBox.checked, forker()))); }
    typeSel.addEventListener("change", redraw);
    agentSel.addEventListener("change", redraw);
    jsonBox.addEventListener("change", redraw);

    let after = 0, stream = null;
    const live = () => run.status === "running" || run.status === "queued" || run.status === "waiting";
    loadWaiting();
    async function refreshRun() {
      try {
        run = await api("/api/runs/" + enc);
        const fresh = runCards(run);
        cards.replaceWith(fresh);
        cards = fresh;
        offer();
        loadWaiting();
      } catch (e) { fail(e); }
    }
    function tail() {
      if (stream || !live()) return;
      stream = new EventSource("/api/runs/" + enc + "/stream?after=" + after);
      liveBadge.hidden = false;
      stream.addEventListener("event", (m) => {
        const ev = JSON.parse(m.data);
        if (ev.seq <= after) return;
        after = ev.seq;
        addEvent(ev, true);
      });
      let pending;
      stream.addEventListener("event", () => { clearTimeout(pending); pending = setTimeout(() => { refreshRun(); loadTrace(); }, 300); });
      stream.addEventListener("end", () => {
        stream.close();
        stream = null;
        liveBadge.hidden = true;
        refreshRun(); loadTrace(); loadGraph(); loadTools();
      });
      cleanup.push(() => { if (stream) stream.close(); });
    }
    async function loadMore() {
      try {
        const page = await api("/api/runs/" + enc + "/events?limit=200&after=" + after);
        for (const ev of page.events) { addEvent(ev, false); after = ev.seq; }
        moreBtn.hidden = !page.next_after;
        if (!page.next_after) tail();
        ok("");
      } catch (e) { fail(e); }
    }
    // showEvent brings an event's row into view (a divergence links to
    // it), loading pages and clearing the filters until it is there.
    async function showEvent(seq) {
      if (typeSel.value || agentSel.value) { typeSel.value = ""; agentSel.value = ""; redraw(); }
      while (!document.getElementById("ev-" + seq) && !moreBtn.hidden) await loadMore();
      const row = document.getElementById("ev-" + seq);
      if (!row) { fail(new Error("event " + seq + " is not one of this run's")); return; }
      for (const r of evBody.querySelectorAll("tr.target")) r.classList.remove("target");
      row.classList.add("target");
      row.scrollIntoView({ block: "center" });
    }
    // showEvents marks each of seqs (loading pages until all are there).
    async function showEvents(seqs) {
      const rows = [];
      for (const seq of seqs) {
        while (!document.getElementById("ev-" + seq) && !moreBtn.hidden) await loadMore();
        const row = document.getElementById("ev-" + seq);
        if (row) { row.classList.add("target"); rows.push(row); }
      }
      const missing = seqs.length - rows.length;
      evNote.replaceChildren(el("span", { id: "events-read" }, "Marked: the " + rows.length + " event" + (rows.length === 1 ? "" : "s") + " a score read (seq " + seqs.join(", ") + ")" +
        (missing ? "; " + missing + " of them not in this run" : "") + "."));
      if (rows.length) rows[0].scrollIntoView({ block: "center" });
    }
    moreBtn.addEventListener("click", loadMore);
    const seqs = ((params && params.get("seqs")) || "").split(",").map(Number).filter((n) => n > 0);
    const first = loadMore();
    if (seqs.length) first.then(() => showEvents(seqs));
  }

  // drawGraph lays the sessions out in layers by lineage (a node one
  // right of its deepest parent) and draws them as SVG; a click opens the
  // session's transcript.
  function drawGraph(g, labels, onSelect) {
    labels = labels || {};
    if (!g.nodes.length) return el("p", { class: "muted" }, "No sessions.");
    const byId = new Map(g.nodes.map((n) => [n.id, n]));
    const parents = new Map();
    for (const e of g.edges) {
      if (!byId.has(e.parent) || !byId.has(e.child) || e.parent === e.child) continue;
      if (!parents.has(e.child)) parents.set(e.child, []);
      parents.get(e.child).push(e.parent);
    }
    const layer = new Map();
    function depth(id, seen) {
      if (layer.has(id)) return layer.get(id);
      if (seen.has(id)) return 0;
      seen.add(id);
      let d = 0;
      for (const p of parents.get(id) || []) d = Math.max(d, depth(p, seen) + 1);
      layer.set(id, d);
      return d;
    }
    const rows = [];
    for (const n of g.nodes) {
      const d = depth(n.id, new Set());
      rows[d] = rows[d] || [];
      rows[d].push(n);
    }
    const W = 220, H = 62, GX = 70, GY = 18, pos = new Map();
    let maxRows = 0;
    rows.forEach((col, x) => {
      (col || []).forEach((n, y) => pos.set(n.id, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) }));
      maxRows = Math.max(maxRows, (col || []).length);
    });
    const width = 20 + rows.length * (W + GX) - GX, height = 20 + maxRows * (H + GY) - GY;
    const root = svg("svg", { class: "graph", width, height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "session graph" });
    for (const e of g.edges) {
      const a = pos.get(e.parent), b = pos.get(e.child);
      if (!a || !b) continue;
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
      root.append(svg("path", { class: "edge", d: "M" + x1 + " " + y1 + " C" + (x1 + GX / 2) + " " + y1 + " " + (x2 - GX / 2) + " " + y2 + " " + x2 + " " + y2 }));
      root.append(svg("text", { class: "edgelabel", x: (x1 + x2) / 2 - 12, y: (y1 + y2) / 2 - 3 }, e.kind));
    }
    for (const n of g.nodes) {
      const p = pos.get(n.id);
      const node = svg("g", { class: "node" + (n.in_run ? " inrun" : ""), "data-session": n.id, transform: "translate(" + p.x + "," + p.y + ")", tabindex: 0 });
      node.append(svg("title", {}, n.id));
      node.append(svg("rect", { width: W, height: H, rx: 6 }));
      node.append(svg("text", { x: 8, y: 18 }, clip(n.id, 30)));
      node.append(svg("text", { x: 8, y: 35 }, clip(n.kind + (n.origin ? " (" + n.origin + ")" : "") + ", " + n.chunks + " chunks", 32)));
      const lb = labels[n.id] || {};
      const outcome = lb.outcome || (n.incomplete ? "incomplete" : "");
      node.append(svg("text", { x: 8, y: 52, class: "label" }, clip((lb.agent || "no model calls") + (outcome ? " · " + outcome : ""), 32)));
      if (outcome) node.classList.add("outcome-" + outcome);
      const open = () => {
        if (onSelect && onSelect(n.id, node)) return;
        location.hash = "#/session/" + encodeURIComponent(n.id);
      };
      node.addEventListener("click", open);
      node.addEventListener("keydown", (ev) => { if (ev.key === "Enter") open(); });
      root.append(node);
    }
    return zoomable(root, width, height);
  }

  // zoomable adds zoom (wheel, buttons) and pan (drag) to an SVG by
  // moving its viewBox.
  function zoomable(root, width, height) {
    let vb = { x: 0, y: 0, w: width, h: height };
    const apply = () => root.setAttribute("viewBox", vb.x + " " + vb.y + " " + vb.w + " " + vb.h);
    const zoom = (f, cx, cy) => {
      const nw = Math.min(Math.max(vb.w * f, 40), width * 8), nh = nw * vb.h / vb.w;
      vb = { x: cx - (cx - vb.x) * nw / vb.w, y: cy - (cy - vb.y) * nh / vb.h, w: nw, h: nh };
      apply();
    };
    root.setAttribute("width", Math.min(width, 1300));
    root.setAttribute("height", Math.min(height, 620));
    root.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = root.getBoundingClientRect();
      zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, vb.x + (e.clientX - r.left) / r.width * vb.w, vb.y + (e.clientY - r.top) / r.height * vb.h);
    }, { passive: false });
    let drag = null;
    root.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, vb: Object.assign({}, vb), moved: false }; });
    window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); });
    root.addEventListener("mousemove", (e) => {
      if (!drag) return;
      const r = root.getBoundingClientRect();
      const dx = (e.clientX - drag.x) / r.width * vb.w, dy = (e.clientY - drag.y) / r.height * vb.h;
      if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3) drag.moved = true;
      vb = Object.assign({}, vb, { x: drag.vb.x - dx, y: drag.vb.y - dy });
      apply();
    });
    // A drag is not a click on the node it ends on.
    root.addEventListener("click", (e) => { if (drag && drag.moved) e.stopPropagation(); }, true);
    const btn = (t, title, f) => { const b = el("button", { class: "small", title }, t); b.addEventListener("click", f); return b; };
    const center = () => [vb.x + vb.w / 2, vb.y + vb.h / 2];
    return el("div", { class: "graph-box" },
      el("div", { class: "graph-tools" }, btn("+", "zoom in", () => zoom(1 / 1.4, ...center())), btn("−", "zoom out", () => zoom(1.4, ...center())),
        btn("fit", "show it all", () => { vb = { x: 0, y: 0, w: width, h: height }; apply(); }),
        el("span", { class: "muted small" }, " wheel to zoom, drag to pan")),
      root);
  }

  // ---- the whole store's graph --------------------------------------

  // graphPage draws every session of the store (or one run's with
  // #/graph/RUN), labelled by agent and outcome; "select two" turns
  // clicks into a choice of two sessions to compare.
  async function graphPage(run) {
    const pick = el("input", { type: "checkbox", id: "graph-select" });
    const chosen = [];
    const go = el("a", { id: "graph-compare", class: "button", hidden: true }, "Compare the two");
    const box = el("div", { id: "graph" }, el("p", { class: "muted" }, "Loading the graph…"));
    main.replaceChildren(el("h1", {}, run ? "Graph of run " + run : "Graph of the store"),
      el("div", { class: "filters" }, el("label", {}, pick, " select two sessions to compare"), go), box);
    const select = (id, node) => {
      if (!pick.checked) return false;
      const i = chosen.findIndex((c) => c.id === id);
      if (i >= 0) { chosen[i].node.classList.remove("chosen"); chosen.splice(i, 1); }
      else {
        if (chosen.length === 2) chosen.shift().node.classList.remove("chosen");
        chosen.push({ id, node });
        node.classList.add("chosen");
      }
      go.hidden = chosen.length !== 2;
      if (chosen.length === 2) go.setAttribute("href", "#/compare/" + encodeURIComponent(chosen[0].id) + "/" + encodeURIComponent(chosen[1].id));
      return true;
    };
    try {
      const q = run ? "?run=" + encodeURIComponent(run) : "";
      const [g, labels] = await Promise.all([api("/api/graph" + q), api("/api/graph/labels" + q)]);
      box.replaceChildren(drawGraph(g, labels, select));
      ok(g.nodes.length + " sessions, " + g.edges.length + " edges");
    } catch (e) { fail(e); }
  }

  // ---- session page -------------------------------------------------

  async function sessionPage(id) {
    let v;
    try { v = await api("/api/sessions/" + encodeURIComponent(id)); } catch (e) { fail(e); return; }
    const s = v.session;
    const chunks = el("div", { id: "transcript" });
    for (const c of v.chunks) chunks.append(chunkBox(c, c.index));
    main.replaceChildren(
      el("h1", {}, "Session ", el("span", { class: "mono" }, s.id)),
      el("div", { class: "cards" }, card("kind", s.kind + (s.origin ? " (" + s.origin + ")" : "")), card("version", String(s.version)),
        card("chunks", String(s.chunks)), card("tokens", s.usage.total_tokens + " in " + s.usage.calls + " calls"),
        el("div", { class: "card" }, el("div", { class: "k" }, "parents"), el("div", { class: "v mono" },
          ...(s.parents.length ? s.parents.flatMap((p, i) => [i ? ", " : "", sessionLink(p)]) : ["–"]))),
        s.backend ? card("placement", s.backend + " " + (s.spec || "")) : null),
      el("p", {}, el("a", { href: "#", id: "back" }, "← back")),
      el("h2", {}, "Transcript"), chunks);
    document.getElementById("back").addEventListener("click", (e) => { e.preventDefault(); history.back(); });
  }

  // ---- workers ------------------------------------------------------

  // workersPage lists the fleet and refreshes itself: each worker's host,
  // pid, state, heartbeat, the runs it holds and how many it finished.
  function workersPage() {
    const body = el("tbody", { id: "workers-body" });
    main.replaceChildren(el("h1", {}, "Workers"), scroll(el("table", { id: "workers" }, el("thead", {}, el("tr", {}, el("th", {}, "worker"), el("th", {}, "host"),
      el("th", { class: "num" }, "pid"), el("th", {}, "queue"), el("th", { class: "num" }, "concurrency"), el("th", {}, "state"), el("th", {}, "heartbeat"),
      el("th", {}, "running"), el("th", { class: "num" }, "done"), el("th", { class: "num" }, "failed"))), body)));
    async function refresh() {
      try {
        const v = await api("/api/workers");
        body.replaceChildren(...v.workers.map((w) => el("tr", { "data-worker": w.id }, el("td", { class: "mono" }, w.id), el("td", {}, w.host || "–"),
          el("td", { class: "num" }, w.pid ? String(w.pid) : "–"), el("td", {}, w.queue), el("td", { class: "num" }, String(w.concurrency)),
          el("td", { class: w.live ? "status-done" : "status-failed" }, w.live ? "live" : "lost"), el("td", { title: w.heartbeat_at }, ago(w.heartbeat_at)),
          el("td", {}, ...(w.runs || []).flatMap((r, i) => [i ? ", " : "", runLink(r)])), el("td", { class: "num" }, String(w.done)),
          el("td", { class: "num" }, String(w.failed)))));
        if (!v.workers.length) body.replaceChildren(el("tr", {}, el("td", { colspan: 10, class: "muted" }, "No workers (rath worker starts one).")));
        ok("updated " + new Date().toLocaleTimeString());
      } catch (e) { fail(e); }
    }
    refresh();
    const timer = setInterval(() => { if (!document.hidden) refresh(); }, 3000);
    cleanup.push(() => clearInterval(timer));
  }

  // toolOutcome says how a call ended in words: an exit code is its own
  // fact (a command that exited 3 has no error message of its own), and
  // a call waiting for a person is not a crash.
  function toolOutcome(tc) {
    const exit = tc.exit_code !== undefined && tc.exit_code !== null ? "exit " + tc.exit_code : "";
    // The time between the call and its result, as the waterfall's bar
    // shows it; the tool's own measure when that is not known.
    const timed = " · " + duration(tc.elapsed_ms || tc.duration_ms);
    switch (tc.state) {
      case "ok": return "ok, " + tc.output_size + " bytes" + (exit ? ", " + exit : "") + timed;
      case "waiting": return "waiting for approval" + (tc.approval ? " (" + tc.approval.id + ")" : "");
      case "rejected": return "rejected" + (tc.approval && tc.approval.by ? " by " + tc.approval.by : "") + (tc.approval && tc.approval.note ? ": " + tc.approval.note : "");
      case "open": return "called, no result recorded (running, or the run stopped)";
    }
    const parts = [];
    if (tc.error_kind) parts.push(tc.error_kind);
    if (exit) parts.push(exit);
    if (tc.error) parts.push(tc.error);
    return "failed" + (parts.length ? ": " + parts.join(", ") : "") + timed;
  }

  // argFields shows a call's arguments one field per line (the server
  // escaped them), the raw JSON one click away.
  function argFields(tc) {
    const box = el("div", { class: "args" });
    if (tc.warning) box.append(el("div", { class: "warning" }, "⚠ " + tc.warning));
    for (const f of tc.fields || []) {
      box.append(el("div", { class: "field" }, f.name ? el("span", { class: "fname mono" }, f.name + ": ") : "", el("span", { class: "payload mono" }, f.value)));
    }
    if (!(tc.fields || []).length) box.append(el("div", { class: "toolcall" }, tc.arguments));
    return box;
  }

  // toolCalls renders a run's tool calls: arguments, outcome (the tail of
  // stderr when one failed) and each changed file as a line diff.
  function toolCalls(tools) {
    if (!tools.length) return [el("p", { class: "muted" }, "No tool calls.")];
    return tools.map((tc) => {
      const box = el("div", { class: "toolcall-box state-" + tc.state, "data-call": tc.call_id, id: "tool-" + tc.seq },
        el("div", { class: "head" }, tc.tool + " (" + tc.call_id + ") by " + (tc.agent || "?") + " · ",
          el("span", { class: "outcome" }, toolOutcome(tc))),
        argFields(tc));
      if (tc.tail) box.append(el("div", { class: "muted" }, "last lines of " + tc.tail_of + ":"), el("pre", { class: "tail" }, tc.tail));
      for (const f of tc.files || []) {
        const pre = el("pre", { class: "diff" });
        for (const l of f.lines || []) {
          const prefix = { add: "+", del: "-", ctx: " ", hunk: "", note: "\\" }[l.kind] || "";
          pre.append(el("span", { class: "d-" + l.kind }, prefix + l.text + "\n"));
        }
        box.append(el("div", { class: "file" }, f.status + " " + f.path + " (+" + f.added + " -" + f.removed + ")" + (f.note ? " · " + f.note : "")), pre);
      }
      return box;
    });
  }

  // ---- two runs or sessions side by side ----------------------------

  async function comparePage(arg) {
    const [a0, b0] = arg ? arg.split("/") : ["", ""];
    const a = el("input", { id: "compare-a", placeholder: "run or session id", size: 30 });
    const b = el("input", { id: "compare-b", placeholder: "run or session id", size: 30 });
    a.value = a0 || ""; b.value = b0 || "";
    const go = el("button", { id: "compare-go" }, "Compare");
    const out = el("div", { id: "compare" });
    go.addEventListener("click", () => { location.hash = "#/compare/" + encodeURIComponent(a.value.trim()) + "/" + encodeURIComponent(b.value.trim()); });
    main.replaceChildren(el("h1", {}, "Compare"), el("div", { class: "filters" }, a, b, go), out);
    if (!a0 || !b0) return;
    let v;
    try { v = await api("/api/compare?" + new URLSearchParams({ a: a0, b: b0 }).toString()); } catch (e) { fail(e); return; }
    const d = v.first_difference;
    out.append(el("p", { id: "compare-verdict", class: d < 0 ? "verdict ok" : "verdict bad" },
      d < 0 ? "The transcripts are the same." : "They diverge at chunk #" + d + "."));
    // The rows align the transcripts: equal chunks face each other, an
    // insertion faces a gap, and only what differs is marked.
    const head = (side) => el("div", { class: "column head" }, sessionLink(side.session.id), " · " + side.session.chunks + " chunks");
    const cell = (side, i, same) => {
      if (i < 0) return el("div", { class: "column gap" }, el("div", { class: "chunk gap-chunk muted" }, "—"));
      const c = side.chunks[i];
      const box = chunkBox(c, c.index);
      if (!same) box.classList.add("diverged");
      return el("div", { class: "column" }, box);
    };
    const grid = el("div", { class: "side-by-side", id: "compare-rows" }, head(v.a), head(v.b));
    for (const r of v.rows || []) grid.append(cell(v.a, r.a, r.same), cell(v.b, r.b, r.same));
    const changed = (v.rows || []).filter((r) => !r.same).length;
    out.append(el("p", { class: "muted", id: "compare-changed" }, changed + " of " + (v.rows || []).length + " aligned rows differ"), grid);
  }

  // ---- approvals inbox ----------------------------------------------

  // A decision records the signed-in identity (the server's), never a
  // name typed here.
  async function approvalsPage() {
    let v;
    try { v = await api("/api/approvals"); } catch (e) { fail(e); return; }
    const list = el("div", { id: "approvals" });
    for (const a of v) list.append(approvalRow(a, null, true));
    if (!v.length) list.append(el("p", { class: "muted" }, "Nothing waits for a person."));
    main.replaceChildren(el("h1", {}, "Approvals"), list);
  }

  // ---- memory: namespaces, browse, search, forget ---------------------

  // memoryPage lists the namespaces; one opens browsed newest first
  // (or searched), each memory with where it came from and a way to
  // forget it with a reason.
  async function memoryPage(arg) {
    const nsList = el("div", { id: "memory-namespaces", class: "ns-list" });
    const ns = el("input", { id: "memory-ns", placeholder: "namespace", size: 20 });
    const q = el("input", { id: "memory-q", type: "search", placeholder: "what to recall (empty: browse)", size: 40 });
    const go = el("button", { id: "memory-go" }, "Search");
    const head = el("thead", {});
    const body = el("tbody", { id: "memory-body" });
    const summary = el("p", { class: "muted", id: "memory-summary" });
    main.replaceChildren(el("h1", {}, "Memory"), nsList, el("div", { class: "filters" }, ns, q, go), summary,
      scroll(el("table", { id: "memory-table" }, head, body)));

    function forgetCell(namespace, m, tr) {
      const reason = el("input", { class: "forget-reason", placeholder: "why forget it", size: 18 });
      const btn = el("button", { class: "forget small" }, "Forget");
      btn.addEventListener("click", async () => {
        if (!reason.value.trim()) { fail(new Error("Say why: the tombstone keeps the reason.")); reason.focus(); return; }
        btn.disabled = true;
        try {
          const r = await api("/api/memory/forget", { method: "POST", body: { ns: namespace, id: m.id, reason: reason.value.trim() } });
          tr.classList.add("forgotten");
          tr.lastChild.replaceChildren(el("span", { class: "muted" }, "forgotten" + (r.reason_recorded ? " (reason recorded)" : " (this backend keeps no reason)")));
          ok("");
          loadNamespaces();
        } catch (e) { fail(e); btn.disabled = false; }
      });
      return el("td", {}, reason, btn);
    }
    function provenance(m) {
      const bits = el("div", { class: "prov" });
      if (m.run) bits.append("run ", runLink(m.run), " ");
      if (m.session) bits.append("session ", sessionLink(m.session), " ");
      if (m.agent) bits.append("by ", el("span", { class: "mono" }, m.agent));
      if (!m.run && !m.session && !m.agent) bits.append(el("span", { class: "muted" }, "remembered directly"));
      return el("td", {}, bits);
    }
    async function show() {
      const namespace = ns.value.trim();
      if (!namespace) return;
      for (const a of nsList.querySelectorAll("a")) a.classList.toggle("selected", a.getAttribute("data-ns") === namespace);
      try {
        if (q.value.trim()) {
          const v = await api("/api/memory/search?" + new URLSearchParams({ ns: namespace, q: q.value }).toString());
          head.replaceChildren(el("tr", {}, el("th", { class: "num" }, "score"), el("th", {}, "id"), el("th", {}, "text"), el("th", {}, "")));
          body.replaceChildren(...v.hits.map((h) => {
            const tr = el("tr", { "data-id": h.id }, el("td", { class: "num" }, h.score.toFixed(3)), el("td", { class: "mono" }, h.id), el("td", { class: "payload" }, h.text));
            tr.append(forgetCell(namespace, h, tr));
            return tr;
          }));
          summary.textContent = v.hits.length + " recalled from " + namespace;
          if (!v.hits.length) body.replaceChildren(el("tr", {}, el("td", { colspan: 4, class: "muted" }, "Nothing recalled.")));
        } else {
          const v = await api("/api/memory/list?" + new URLSearchParams({ ns: namespace, limit: "200" }).toString());
          head.replaceChildren(el("tr", {}, el("th", {}, "id"), el("th", {}, "text"), el("th", {}, "from"), el("th", {}, "at"), el("th", {}, "")));
          body.replaceChildren(...v.items.map((m) => {
            const tr = el("tr", { "data-id": m.id }, el("td", { class: "mono" }, m.id), el("td", { class: "payload" }, m.text), provenance(m),
              el("td", { class: "mono", title: m.at || "" }, m.at ? ago(m.at) : "–"));
            tr.append(forgetCell(namespace, m, tr));
            return tr;
          }));
          summary.textContent = namespace + ": " + v.total + " live memories" + (v.total > v.items.length ? ", the newest " + v.items.length + " shown" : "") + ", newest first";
          if (!v.items.length) body.replaceChildren(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No live memories.")));
        }
        ok("");
      } catch (e) { fail(e); }
    }
    async function loadNamespaces() {
      try {
        const v = await api("/api/memory/namespaces");
        nsList.replaceChildren(el("span", { class: "muted" }, v.length ? "namespaces: " : "No memories yet."), ...v.map((n) => {
          const a = el("a", { href: "#/memory/" + encodeURIComponent(n.namespace), "data-ns": n.namespace, class: n.namespace === ns.value.trim() ? "selected" : null },
            n.namespace + " (" + n.live + ")");
          return a;
        }));
      } catch (e) { fail(e); }
    }
    go.addEventListener("click", show);
    q.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
    ns.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
    if (arg) { ns.value = arg; show(); }
    loadNamespaces();
  }

  // ---- routing ------------------------------------------------------

  // Pages other scripts add (evals.js), by the hash's first segment.
  const pages = {};

  // route reads #/PAGE/ARG?K=V: ARG is encoded, so a "?" in it is the
  // query's.
  // generation counts the routes taken: a page whose data arrives after
  // the user moved on draws nothing.
  let generation = 0;
  function route() {
    generation++;
    for (const f of cleanup) f();
    cleanup = [];
    ok("");
    const [h, q] = location.hash.replace(/^#\/?/, "").split("?");
    const params = new URLSearchParams(q || "");
    const [page, ...rest] = h.split("/");
    const arg = decodeURIComponent(rest.join("/"));
    if (Object.prototype.hasOwnProperty.call(pages, page)) return pages[page](rest.map(decodeURIComponent), params);
    switch (page) {
      case "run": return runPage(arg, params);
      case "session": return sessionPage(arg);
      case "workers": return workersPage();
      case "memory": return memoryPage(arg);
      case "graph": return graphPage(arg);
      case "approvals": return approvalsPage();
      case "compare": return comparePage(rest.map(decodeURIComponent).join("/"));
      default: return runsPage();
    }
  }
  // The nav's badge counts what waits for a person, on every page.
  const badge = el("span", { class: "badge", id: "approvals-badge", hidden: true });
  document.getElementById("nav-approvals").append(badge);
  async function pendingBadge() {
    if (document.hidden) return;
    try {
      const v = await api("/api/approvals");
      badge.textContent = String(v.length);
      badge.hidden = v.length === 0;
    } catch (e) { /* the page's own requests report errors */ }
  }
  pendingBadge();
  setInterval(pendingBadge, 5000);

  // What evals.js (loaded after this script) builds its pages with.
  window.rathConsole = Object.freeze({ el, api, fail, ok, scroll, clip, ago, runLink, sessionLink, main, pages, generation: () => generation });

  window.addEventListener("hashchange", route);
  // Deferred scripts have all run by DOMContentLoaded: every page is known.
  document.addEventListener("DOMContentLoaded", route);
})();
