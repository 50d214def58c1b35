// The console's Evals page: datasets, experiments and their scores, and
// two experiments side by side, over /api/evals/. It only reads: scores
// are recorded by `rath score`. Dataset metadata, inputs and score
// reasons are hostile text: written through el (text nodes) only.
"use strict";

(function () {
  const { el, api, fail, ok, scroll, clip, ago, runLink, main, pages, generation } = window.rathConsole;
  const enc = encodeURIComponent;

  // load fetches a page's data; it resolves to undefined when the user
  // moved on meanwhile (the page then draws nothing) and rejects on an
  // error only while the page is current.
  async function load(path) {
    const gen = generation();
    try {
      const v = await api(path);
      return gen === generation() ? v : undefined;
    } catch (e) {
      if (gen === generation()) throw e;
      return undefined;
    }
  }

  function num(v) {
    return typeof v === "number" ? (Math.round(v * 1000) / 1000).toString() : "–";
  }

  function signed(v) {
    const s = num(v);
    return v > 0 ? "+" + s : s;
  }

  function datasetLink(name) {
    return el("a", { href: "#/evals/dataset/" + enc(name), class: "dataset-link" }, name);
  }

  function experimentLink(name) {
    return el("a", { href: "#/evals/experiment/" + enc(name), class: "experiment-link" }, name);
  }

  // json shows a JSON value as text: a string as itself, the rest as JSON.
  function json(v) {
    if (v === undefined || v === null) return "–";
    return typeof v === "string" ? v : JSON.stringify(v);
  }

  // failed replaces the page with a 404's message; other errors go to
  // the status line.
  function failed(e, what, name) {
    if (e.status === 404) {
      main.replaceChildren(el("h1", {}, what + " ", el("span", { class: "mono" }, name)),
        el("div", { class: "verdict bad", id: "not-found" }, el("strong", {}, "No such " + what.toLowerCase()), " in this store: " + e.message),
        el("p", {}, el("a", { href: "#/evals" }, "← all datasets and experiments")));
      ok("");
      return;
    }
    fail(e);
    main.replaceChildren(el("h1", {}, what + " ", el("span", { class: "mono" }, name)), el("p", { class: "error", id: "load-error" }, "Could not load it."));
  }

  function meansCell(means) {
    return el("td", { class: "means" }, ...(means || []).map((m) =>
      el("div", { class: "mean" }, el("span", { class: "mono" }, m.scorer), " " + num(m.mean) + " (" + m.items + " items)")));
  }

  function experimentsTable(xs, id) {
    return scroll(el("table", { id },
      el("thead", {}, el("tr", {}, el("th", {}, "experiment"), el("th", {}, "dataset"), el("th", {}, "per scorer mean"), el("th", { class: "num" }, "scores"))),
      el("tbody", {}, ...xs.map((x) => el("tr", { "data-experiment": x.name },
        el("td", { class: "mono" }, experimentLink(x.name)), el("td", { class: "mono" }, datasetLink(x.dataset)), meansCell(x.means),
        el("td", { class: "num" }, String(x.scores)))))));
  }

  // comparePicker offers two experiments to set side by side.
  function comparePicker(xs, a0, b0) {
    const pick = (id, v) => {
      const s = el("select", { id, "aria-label": id }, ...xs.map((x) => el("option", { value: x.name }, x.name)));
      if (v) s.value = v;
      return s;
    };
    const a = pick("evals-compare-a", a0 || (xs[0] && xs[0].name));
    const b = pick("evals-compare-b", b0 || (xs[1] && xs[1].name));
    const go = el("button", { id: "evals-compare-go" }, "Compare");
    go.addEventListener("click", () => { location.hash = "#/evals/compare/" + enc(a.value) + "/" + enc(b.value); });
    return el("div", { class: "filters" }, "A ", a, " B ", b, go);
  }

  async function listPage() {
    main.replaceChildren(el("h1", {}, "Evals"), el("p", { class: "muted" }, "Loading…"));
    let v;
    try { v = await load("/api/evals/datasets"); } catch (e) { fail(e); return; }
    if (!v) return;
    const ds = scroll(el("table", { id: "datasets" },
      el("thead", {}, el("tr", {}, el("th", {}, "dataset"), el("th", {}, "source"), el("th", { class: "num" }, "items"), el("th", {}, "created"))),
      el("tbody", {}, ...v.datasets.map((d) => el("tr", { "data-dataset": d.name },
        el("td", { class: "mono" }, datasetLink(d.name)), el("td", {}, d.source), el("td", { class: "num" }, String(d.items)),
        el("td", { title: d.created }, ago(d.created)))))));
    main.replaceChildren(el("h1", {}, "Evals"),
      el("p", { class: "muted" }, "Scores are recorded by rath score; each is an event bound to the events it read. This page only reads them."),
      el("h2", {}, "Datasets"), v.datasets.length ? ds : el("p", { class: "muted" }, "No datasets: rath dataset create NAME --runs makes one."),
      el("h2", {}, "Experiments"), v.experiments.length ? experimentsTable(v.experiments, "experiments") : el("p", { class: "muted" }, "No experiments: rath score DATASET --scorer SPEC records one."),
      v.experiments.length > 1 ? el("h2", {}, "Compare two experiments") : null,
      v.experiments.length > 1 ? comparePicker(v.experiments) : null);
  }

  async function datasetPage(name) {
    main.replaceChildren(el("h1", {}, "Dataset ", el("span", { class: "mono" }, name)), el("p", { class: "muted" }, "Loading…"));
    let v;
    try { v = await load("/api/evals/datasets/" + enc(name)); } catch (e) { failed(e, "Dataset", name); return; }
    if (!v) return;
    const items = scroll(el("table", { id: "items" },
      el("thead", {}, el("tr", {}, el("th", {}, "item"), el("th", {}, "run"), el("th", {}, "input"), el("th", {}, "ideal"), el("th", {}, "metadata"),
        el("th", {}, "pinned"))),
      el("tbody", {}, ...v.items.map((it) => el("tr", { "data-item": it.id },
        el("td", { class: "mono" }, it.id),
        el("td", { class: "mono" }, it.run ? runLink(it.run) : el("span", { class: "muted" }, "no recording")),
        el("td", { class: "payload" }, clip(json(it.input), 300)),
        el("td", { class: "payload" }, clip(json(it.ideal), 200)),
        el("td", { class: "payload metadata" }, it.metadata ? clip(JSON.stringify(it.metadata), 300) : "–"),
        el("td", { class: "mono small", title: it.last_leaf || null }, it.run ? el("a", { href: "#/run/" + enc(it.run) + "?seqs=" + it.last_seq }, "seq " + it.last_seq) : "–"))))));
    main.replaceChildren(el("h1", {}, "Dataset ", el("span", { class: "mono" }, v.name)),
      el("p", { class: "muted" }, v.items.length + " items from " + v.source + " · recorded at seq " + v.created_seq + " · id " + v.id.slice(0, 16)),
      items,
      el("h2", {}, "Experiments over it"),
      v.experiments.length ? experimentsTable(v.experiments, "dataset-experiments") : el("p", { class: "muted" }, "None yet."),
      v.experiments.length > 1 ? comparePicker(v.experiments) : null,
      el("p", {}, el("a", { href: "#/evals" }, "← all datasets and experiments")));
  }

  // readLinks groups a score's reads by run: each group links to that
  // run's page with the events marked.
  function readLinks(s) {
    const byRun = new Map();
    for (const r of s.reads || []) {
      const run = r.run || s.run;
      if (!byRun.has(run)) byRun.set(run, []);
      byRun.get(run).push(r);
    }
    const out = el("td", { class: "reads" });
    for (const [run, reads] of byRun) {
      const bad = reads.filter((r) => !r.matches);
      out.append(el("div", {},
        el("a", { class: "read-link", href: "#/run/" + enc(run) + "?seqs=" + reads.map((r) => r.seq).join(","),
          title: reads.map((r) => "seq " + r.seq + " " + (r.type || "?") + " leaf " + r.leaf.slice(0, 16)).join("\n") },
        "seq " + reads.map((r) => r.seq).join(", ")),
        run !== s.run ? el("span", { class: "muted small" }, " in " + run) : null,
        bad.length ? el("span", { class: "error small read-mismatch" }, " " + bad.length + " no longer match the log (rath verify)") : null));
    }
    if (!byRun.size) out.append("–");
    return out;
  }

  async function experimentPage(name) {
    main.replaceChildren(el("h1", {}, "Experiment ", el("span", { class: "mono" }, name)), el("p", { class: "muted" }, "Loading…"));
    let v;
    try { v = await load("/api/evals/experiments/" + enc(name)); } catch (e) { failed(e, "Experiment", name); return; }
    if (!v) return;
    const means = scroll(el("table", { id: "means" },
      el("thead", {}, el("tr", {}, el("th", {}, "scorer"), el("th", { class: "num" }, "mean"), el("th", { class: "num" }, "items"))),
      el("tbody", {}, ...v.means.map((m) => el("tr", { "data-scorer": m.scorer }, el("td", { class: "mono" }, m.scorer),
        el("td", { class: "num" }, num(m.mean)), el("td", { class: "num" }, String(m.items)))))));
    const scores = scroll(el("table", { id: "scores" },
      el("thead", {}, el("tr", {}, el("th", {}, "item"), el("th", {}, "run"), el("th", {}, "scorer"), el("th", { class: "num" }, "value"),
        el("th", {}, "reason"), el("th", {}, "read"), el("th", { class: "num" }, "seq"))),
      el("tbody", {}, ...v.scores.map((s) => el("tr", { "data-item": s.item, "data-scorer": s.scorer, class: s.value >= 0.5 ? "pass" : "fail" },
        el("td", { class: "mono" }, s.item), el("td", { class: "mono" }, runLink(s.run)),
        el("td", { class: "mono", title: "version " + s.version + " · config " + s.config_hash.slice(0, 16) }, s.scorer),
        el("td", { class: "num value" }, num(s.value)), el("td", { class: "payload reason" }, s.reason),
        readLinks(s), el("td", { class: "num" }, String(s.seq)))))));
    main.replaceChildren(el("h1", {}, "Experiment ", el("span", { class: "mono" }, v.name)),
      el("p", { class: "muted" }, "over dataset ", datasetLink(v.dataset), " · started at seq " + v.started_seq + " · " + v.scores.length + " scores"),
      el("h2", {}, "Per scorer means"), means,
      el("h2", {}, "Scores"), el("p", { class: "muted" }, "Each score links to its run and to the events it read, marked on the run's page."), scores,
      el("p", {}, el("a", { href: "#/evals" }, "← all datasets and experiments")));
  }

  function deltaRow(d, v) {
    const run = (m) => (m[d.item] ? runLink(m[d.item]) : "–");
    return el("tr", { "data-item": d.item, "data-scorer": d.scorer, class: d.flipped ? "flipped" : null },
      el("td", { class: "mono" }, d.item), el("td", { class: "mono" }, d.scorer),
      el("td", { class: "num" }, num(d.a)), el("td", { class: "num" }, num(d.b)), el("td", { class: "num" }, signed(d.delta)),
      el("td", { class: "mono" }, run(v.runs_a)), el("td", { class: "mono" }, run(v.runs_b)));
  }

  function deltaTable(rows, v, id) {
    return scroll(el("table", { id },
      el("thead", {}, el("tr", {}, el("th", {}, "item"), el("th", {}, "scorer"), el("th", { class: "num" }, "A"), el("th", { class: "num" }, "B"),
        el("th", { class: "num" }, "B − A"), el("th", {}, "run in A"), el("th", {}, "run in B"))),
      el("tbody", {}, ...rows.map((d) => deltaRow(d, v)))));
  }

  async function comparePage(a, b) {
    main.replaceChildren(el("h1", {}, "Compare experiments"), el("p", { class: "muted" }, "Loading…"));
    let v;
    try { v = await load("/api/evals/compare?" + new URLSearchParams({ a, b }).toString()); } catch (e) { failed(e, "Experiment", a + " or " + b); return; }
    if (!v) return;
    const scorers = scroll(el("table", { id: "compare-means" },
      el("thead", {}, el("tr", {}, el("th", {}, "scorer"), el("th", { class: "num" }, "mean A"), el("th", { class: "num" }, "mean B"), el("th", { class: "num" }, "B − A"))),
      el("tbody", {}, ...v.scorers.map((s) => el("tr", { "data-scorer": s.scorer }, el("td", { class: "mono" }, s.scorer),
        el("td", { class: "num" }, num(s.mean_a)), el("td", { class: "num" }, num(s.mean_b)), el("td", { class: "num" }, signed(s.delta)))))));
    const only = [[v.only_a, "only in A"], [v.only_b, "only in B"]].filter(([l]) => l && l.length)
      .map(([l, what]) => el("p", { class: "muted" }, l.length + " scored " + what + ": " + clip(l.join(", "), 400)));
    main.replaceChildren(el("h1", {}, "Compare experiments"),
      el("p", {}, "A ", experimentLink(v.a), " · B ", experimentLink(v.b)),
      el("h2", {}, "Per scorer means"), scorers,
      el("h2", {}, "Flipped items"),
      v.flipped.length ? deltaTable(v.flipped, v, "flipped") : el("p", { class: "muted", id: "flipped" }, "No item flipped between pass (0.5 or more) and fail."),
      el("h2", {}, "Per item deltas"), deltaTable(v.items, v, "deltas"), ...only,
      el("p", {}, el("a", { href: "#/evals" }, "← all datasets and experiments")));
  }

  // #/evals, #/evals/dataset/NAME, #/evals/experiment/NAME,
  // #/evals/compare/A/B.
  pages.evals = function (args) {
    const [kind, a, b] = args;
    switch (kind) {
      case "dataset": return datasetPage(a || "");
      case "experiment": return experimentPage(a || "");
      case "compare": return comparePage(a || "", b || "");
      default: return listPage();
    }
  };
})();
