// PyPTO's compilation viewer. It draws what the compiler exported (the JSON in the
// page's #pypto-data element: lower/visualize.go) and computes nothing about the
// program itself: levels become node/edge lists, grouped by the user's calls (the
// scope each location carries), laid out by dagre.
"use strict";
(function () {
  const t0 = performance.now();
  const DATA = JSON.parse(document.getElementById("pypto-data").textContent);
  // The programs' text is most of the data: parsed when the Programs tab first opens.
  let programs = null;
  const programsOf = () => programs || (programs = JSON.parse(document.getElementById("pypto-programs").textContent));
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const state = { level: null, expanded: new Set(), selected: null, matches: new Set(), layoutMs: 0, timings: { parseMs: performance.now() - t0 } };
  window.__pyptoViz = state; // read by the browser test and bench/viz_load.py

  // ---- formatting ---------------------------------------------------------------
  function bytes(n) {
    if (n == null || n < 0) return "?";
    const u = ["B", "KiB", "MiB", "GiB"];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : n) + " " + u[i];
  }
  function locText(loc) {
    if (!loc || !loc.file) return "";
    return loc.file.split("/").pop() + ":" + loc.line + (loc.func ? " in " + loc.func : "");
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }
  function estText(e) {
    if (!e) return "";
    if (e.cycles < 0) return "unknown (" + e.error + ")";
    return e.cycles.toLocaleString() + " cycles (" + e.us.toFixed(2) + " us)";
  }

  // ---- grouping by the user's calls -----------------------------------------------
  // A location's scope lists the user's frames that created it, outermost first
  // ("model@57;Block.forward@12;attention@30"). Items (in program order) with the same
  // chain of frames belong to the same group at each depth; a frame's line going back
  // (the next iteration of a loop, or a new call of the same function) starts a new
  // instance, so the layers of a model written as a loop get a group each.
  function assignGroups(items, groups) {
    const open = []; // per depth: {parent, func, line, id}
    const counts = {};
    for (const it of items) {
      const scope = it.loc && it.loc.scope ? it.loc.scope.split(";") : [];
      const path = [];
      let parent = "";
      for (let d = 0; d < scope.length; d++) {
        const at = scope[d].lastIndexOf("@");
        const func = scope[d].slice(0, at), line = +scope[d].slice(at + 1);
        let g = open[d];
        if (!g || g.parent !== parent || g.func !== func || line < g.line) {
          const key = parent + "/" + func;
          counts[key] = (counts[key] || 0) + 1;
          g = open[d] = { parent, func, line, id: "g:" + key + "#" + counts[key], n: counts[key] };
          open.length = d + 1;
          groups.set(g.id, { id: g.id, label: func + " #" + g.n, parent: parent || null, first: line, last: line, size: 0 });
        }
        g.line = line;
        const gr = groups.get(g.id);
        gr.first = Math.min(gr.first, line);
        gr.last = Math.max(gr.last, line);
        path.push(g.id);
        parent = g.id;
      }
      it.path = path;
    }
  }
  // Sizes count the nodes under each group; a group of one node is no group.
  function settleGroups(items, groups) {
    for (const it of items) for (const gid of it.path) groups.get(gid).size++;
    const parentOf = new Map([...groups].map(([id, g]) => [id, g.parent]));
    for (const [id, g] of groups) if (g.size < 2) groups.delete(id);
    for (const it of items) it.path = it.path.filter((gid) => groups.has(gid));
    for (const g of groups.values()) {
      let p = g.parent;
      while (p && !groups.has(p)) p = parentOf.get(p);
      g.parent = p || null;
    }
    for (const g of groups.values()) g.label += g.first === g.last ? " (line " + g.first + ")" : " (lines " + g.first + "\u2013" + g.last + ")";
  }
  // Items without a scope (inputs, constants) join the group of their first user.
  function adoptOrphans(nodes, edges) {
    const byId = new Map(nodes.map((n) => [n.id, n]));
    for (const e of edges) {
      const a = byId.get(e.from), b = byId.get(e.to);
      if (a && b && !a.path.length && !a.adopted && b.path.length) { a.path = b.path.slice(); a.adopted = true; }
    }
  }

  // ---- the levels -------------------------------------------------------------------
  const tile = DATA.tile, tasks = DATA.exec.tasks;
  const opsOfNode = new Map(); // lowered tensor value -> tile op ids
  for (const op of tile.ops) { if (!opsOfNode.has(op.node)) opsOfNode.set(op.node, []); opsOfNode.get(op.node).push(op.id); }
  const tasksOfKernel = new Map();
  for (const t of tasks) { if (!tasksOfKernel.has(t.kernel)) tasksOfKernel.set(t.kernel, []); tasksOfKernel.get(t.kernel).push(t.id); }
  const producer = new Map(); // tile tensor -> op writing it (aliases: their root's)
  for (const op of tile.ops) producer.set(op.output, op.id);
  function producerOf(t) {
    for (let k = 0; k < 64 && t >= 0; k++) {
      if (producer.has(t)) return producer.get(t);
      t = tile.tensors[t].alias;
    }
    return undefined;
  }
  const loweredByLine = new Map();
  for (const n of DATA.tensor.nodes) {
    if (!n.loc || !n.loc.file) continue;
    const k = n.loc.file + ":" + n.loc.line;
    if (!loweredByLine.has(k)) loweredByLine.set(k, []);
    loweredByLine.get(k).push(n.id);
  }

  function tileLinks(opIds) {
    const links = [];
    for (const o of opIds) {
      const op = tile.ops[o];
      links.push({ level: "tile", id: "o" + o, text: "tile op" + o + " " + op.op + " (" + op.tiles + " tiles)" });
      links.push({ level: "block", id: "k" + o, text: "kernel k" + o + " (" + DATA.block.kernels[o].tiles.length + " blocks)" });
      for (const t of tasksOfKernel.get(o) || []) {
        links.push({ level: "exec", id: "t" + t, text: "task " + t + " " + tasks[t].name });
        links.push({ level: "programs", id: t, text: "PTO and machine programs of task " + t });
      }
    }
    return links;
  }
  function tileAttrs(opIds) {
    const a = {};
    if (!opIds.length) return a;
    const ops = opIds.map((o) => tile.ops[o]);
    a["tile shape"] = ops.map((o) => "[" + o.tile.join(",") + "]").join(" ");
    a["core kind"] = ops.map((o) => o.core).join(" ");
    let cy = 0, us = 0, bad = false;
    for (const o of opIds) { const e = DATA.estimates[o]; if (e.cycles < 0) bad = true; else { cy += e.cycles; us += e.us; } }
    a["estimate"] = bad ? "unknown" : cy.toLocaleString() + " cycles (" + us.toFixed(2) + " us)";
    return a;
  }
  function tensorNode(n, lowered) {
    const attrs = { name: n.name, op: n.op, shape: n.shape, dtype: n.dtype, layout: n.layout, bytes: bytes(n.bytes), source: locText(n.loc) };
    if (n.loc && n.loc.scope) attrs["called from"] = n.loc.scope.split(";").join(" > ");
    if (n.output) attrs.output = "yes";
    for (const [k, v] of Object.entries(n.attrs || {})) if (k !== "body") attrs["attr " + k] = v;
    if (n.body_ops) attrs["fused ops"] = n.body_ops.join(", ");
    let links = [], core = n.op === "param" ? "input" : "none";
    if (lowered) {
      const ops = opsOfNode.get(n.id) || [];
      Object.assign(attrs, tileAttrs(ops));
      links = tileLinks(ops);
      if (ops.length) core = tile.ops[ops[0]].core;
    } else if (n.loc && n.loc.file) {
      for (const id of loweredByLine.get(n.loc.file + ":" + n.loc.line) || []) {
        const m = DATA.tensor.nodes.find((x) => x.id === id);
        links.push({ level: "tensor", id: "n" + id, text: "lowered " + m.name + " " + m.op + " (same source line)" });
      }
    }
    return { id: "n" + n.id, label: n.op === "param" ? n.name : n.op, sub: n.shape + " " + n.dtype, core, loc: n.loc, attrs, links,
      body: n.attrs && n.attrs.body, search: (n.name + " " + n.op + " " + (n.body_ops || []).join(" ")).toLowerCase() };
  }
  function tensorLevel(g, lowered) {
    const nodes = g.nodes.map((n) => tensorNode(n, lowered));
    const byId = new Map(g.nodes.map((n) => [n.id, n]));
    const edges = [];
    for (const n of g.nodes) for (const i of n.inputs) edges.push({ from: "n" + i, to: "n" + n.id, bytes: byId.get(i).bytes });
    return { nodes, edges };
  }
  function opEdges(prefix, ids) {
    const edges = [];
    for (const op of tile.ops) {
      if (ids && !ids.has(op.id)) continue;
      for (const t of op.inputs) {
        const p = producerOf(t);
        if (p !== undefined && p !== op.id) edges.push({ from: prefix + p, to: prefix + op.id, bytes: tile.tensors[t].bytes });
      }
    }
    return edges;
  }
  function tileLevel() {
    const nodes = tile.ops.map((op) => ({
      id: "o" + op.id, label: "op" + op.id + " " + op.op, sub: op.kind + " tile [" + op.tile.join(",") + "]", core: op.core, loc: op.loc,
      attrs: { op: op.op, kind: op.kind, "core kind": op.core, output: "t" + op.output + " " + tile.tensors[op.output].type,
        inputs: op.inputs.map((t) => "t" + t + " " + tile.tensors[t].type + " (" + tile.tensors[t].role + ")").join("\n"),
        problem: "[" + op.problem.join(",") + "]", "tile shape": "[" + op.tile.join(",") + "]", grid: "[" + op.grid.join(",") + "]",
        tiles: op.tiles, why: op.reason || "", estimate: estText(DATA.estimates[op.id]), source: locText(op.loc), ...prefixAttrs(op.attrs) },
      links: [{ level: "tensor", id: "n" + op.node, text: "tensor node %" + op.node }].concat(tileLinks([op.id]).slice(1)),
      search: ("op" + op.id + " " + op.op + " " + op.kind).toLowerCase(),
    }));
    return { nodes, edges: opEdges("o") };
  }
  function prefixAttrs(attrs) {
    const a = {};
    for (const [k, v] of Object.entries(attrs || {})) if (k !== "body") a["attr " + k] = v;
    return a;
  }
  function blockLevel() {
    const nodes = DATA.block.kernels.map((k) => {
      const op = tile.ops[k.op];
      const tl = k.tiles;
      return { id: "k" + k.id, label: "k" + k.id + " " + op.op, sub: tl.length + " blocks on " + k.core, core: k.core, loc: op.loc,
        attrs: { op: op.op, "core kind": k.core, blocks: tl.length, "tiles per block": tl.length ? Math.min(...tl) + " to " + Math.max(...tl) : "0",
          "first block's tiles": k.first.join(","), "tile shape": "[" + op.tile.join(",") + "]", estimate: estText(DATA.estimates[k.op]), source: locText(op.loc) },
        links: [{ level: "tensor", id: "n" + op.node, text: "tensor node %" + op.node }].concat(tileLinks([k.op]).filter((l) => l.level !== "block")),
        search: ("k" + k.id + " " + op.op).toLowerCase() };
    });
    return { nodes, edges: opEdges("k") };
  }
  function execLevel() {
    const nodes = tasks.map((t) => {
      const op = tile.ops[t.kernel];
      const core = t.vectors > 0 ? "mixed" : t.core;
      return { id: "t" + t.id, label: "task " + t.id + " " + op.op, sub: t.blocks + " blocks, " + core, core, loc: op.loc,
        attrs: { name: t.name, op: op.op, "core kind": core, blocks: t.blocks, "vector programs per block": t.vectors,
          args: t.args.map((a) => "t" + a + " " + tile.tensors[a].type + " @" + DATA.exec.buffers[a].offset).join("\n"),
          "depends on": t.deps.map((d) => "task " + d).join(", "), estimate: estText(DATA.estimates[t.kernel]), source: locText(op.loc) },
        links: [{ level: "tensor", id: "n" + op.node, text: "tensor node %" + op.node }, { level: "tile", id: "o" + op.id, text: "tile op" + op.id },
          { level: "block", id: "k" + op.id, text: "kernel k" + op.id }, { level: "programs", id: t.id, text: "PTO and machine programs" }],
        search: (t.name + " " + op.op).toLowerCase() };
    });
    const edges = [];
    for (const t of tasks) for (const d of t.deps) {
      const out = tile.ops[tasks[d].kernel].output;
      let b = 0;
      for (const a of t.args) if (producerOf(a) === tasks[d].kernel || a === out) b += tile.tensors[a].bytes;
      edges.push({ from: "t" + d, to: "t" + t.id, bytes: b });
    }
    return { nodes, edges };
  }

  const LEVELS = [
    { key: "input", title: "Tensor (traced)", build: () => tensorLevel(DATA.input, false) },
    { key: "tensor", title: "Tensor (lowered)", build: () => tensorLevel(DATA.tensor, true) },
    { key: "tile", title: "Tile", build: tileLevel },
    { key: "block", title: "Block", build: blockLevel },
    { key: "exec", title: "Execution", build: execLevel },
    { key: "programs", title: "Programs", text: showPrograms },
    { key: "passes", title: "Passes", text: showPasses },
  ];
  const built = {};
  function levelData(key) {
    if (!built[key]) {
      const tb = performance.now();
      const lv = LEVELS.find((l) => l.key === key);
      const d = lv.build();
      d.groups = new Map();
      assignGroups(d.nodes, d.groups);
      adoptOrphans(d.nodes, d.edges);
      settleGroups(d.nodes, d.groups);
      d.byId = new Map(d.nodes.map((n) => [n.id, n]));
      const ts = performance.now();
      d.startOpen = startOpen(d);
      state.timings[key] = { buildMs: ts - tb, openGroupsMs: performance.now() - ts };
      built[key] = d;
    }
    return built[key];
  }

  // The page opens groups outermost first while the view stays small.
  function startOpen(d) {
    const open = new Set();
    const kids = new Map();
    for (const g of d.groups.values()) { const k = g.parent || ""; if (!kids.has(k)) kids.set(k, []); kids.get(k).push(g.id); }
    const queue = [...(kids.get("") || [])];
    const count = () => { state.expanded = open; return visible(d).items.length; };
    while (queue.length) {
      const g = queue.shift();
      open.add(g);
      if (count() > 40) { open.delete(g); break; }
      queue.push(...(kids.get(g) || []));
    }
    state.expanded = new Set();
    return [...open];
  }

  // ---- what is visible: collapsed groups stand for their nodes --------------------
  function visible(d) {
    const rep = (n) => { for (const g of n.path) if (!state.expanded.has(g)) return g; return n.id; };
    const parentOf = (n, r) => { let p = null; for (const g of n.path) { if (g === r) break; p = g; } return p; };
    const items = new Map(), clusters = new Set();
    for (const n of d.nodes) {
      const r = rep(n);
      if (!items.has(r)) items.set(r, { id: r, group: r !== n.id ? d.groups.get(r) : null, node: r === n.id ? n : null, parent: parentOf(n, r), ops: {} });
      const it = items.get(r);
      if (it.group) it.ops[n.label] = (it.ops[n.label] || 0) + 1;
      for (const g of n.path) { if (!state.expanded.has(g)) break; clusters.add(g); }
    }
    const repOf = new Map();
    for (const n of d.nodes) repOf.set(n.id, rep(n));
    const agg = new Map();
    for (const e of d.edges) {
      const a = repOf.get(e.from), b = repOf.get(e.to);
      if (a === undefined || b === undefined || a === b) continue;
      const k = a + "\u0000" + b;
      if (!agg.has(k)) agg.set(k, { from: a, to: b, bytes: 0, n: 0 });
      const x = agg.get(k); x.bytes += e.bytes || 0; x.n++;
    }
    return { items: [...items.values()], edges: [...agg.values()], clusters: [...clusters] };
  }

  // ---- drawing ------------------------------------------------------------------------
  const svg = $("graph");
  let view = { x: 0, y: 0, w: 1000, h: 800 }, graphBox = { w: 1000, h: 800 };
  function el(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }
  function setView() { svg.setAttribute("viewBox", view.x + " " + view.y + " " + view.w + " " + view.h); }
  function fit() {
    const r = svg.getBoundingClientRect();
    const s = Math.max(graphBox.w / Math.max(r.width, 1), graphBox.h / Math.max(r.height, 1), 0.5);
    view = { x: -20, y: -20, w: Math.max(r.width, 1) * s + 40, h: Math.max(r.height, 1) * s + 40 };
    setView();
  }
  function center(id) {
    const g = svg.querySelector('[data-id="' + CSS.escape(id) + '"]');
    if (!g) return;
    const [x, y] = g.getAttribute("data-xy").split(",").map(Number);
    const r = svg.getBoundingClientRect();
    view.w = Math.max(r.width, 1) * 1.2; view.h = Math.max(r.height, 1) * 1.2;
    view.x = x - view.w / 2; view.y = y - view.h / 2;
    setView();
  }
  function summary(ops) {
    return Object.entries(ops).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, v]) => v + "x " + k).join(", ");
  }

  // ---- layout: each open group laid out on its own, bottom up, and cached ----------------
  // dagre's work grows faster than the number of nodes, so a large level is never laid
  // out as one graph: each open group (and the top level) is a small dagre graph of its
  // direct children, closed groups and open ones as boxes of the size their own layout
  // gave, and an edge between items of different groups is laid out in the innermost
  // group holding both, between the children that hold its ends. A group's layout is
  // kept while its children and their sizes stay the same, so opening a group lays out
  // that group and the groups around it, not the whole level.
  const PAD = 10, PAD_TOP = 24, NODE_H = 34;
  const layoutCache = {}; // level -> Map(scope -> {sig, w, h, pos, points})
  function itemSize(it) {
    const label = it.group ? "\u25b8 " + it.group.label + " (" + it.group.size + ")" : it.node.label;
    const sub = it.group ? summary(it.ops) : it.node.sub;
    return { label, sub, w: Math.min(260, Math.max(80, 6.6 * Math.max(label.length, sub.length) + 16)), h: NODE_H };
  }
  function layoutLevel(d, v) {
    const ROOT = "";
    const stats = { dagreCalls: 0, dagreNodes: 0, maxDagreNodes: 0, cachedScopes: 0, scopes: 0 };
    const cache = layoutCache[state.level] || (layoutCache[state.level] = new Map());
    const kids = new Map(), scopeOf = new Map(), info = new Map();
    const add = (s, id) => { if (!kids.has(s)) kids.set(s, []); kids.get(s).push(id); scopeOf.set(id, s); };
    for (const c of v.clusters) {
      const p = d.groups.get(c).parent;
      add(p && state.expanded.has(p) ? p : ROOT, c);
      info.set(c, { cluster: true, label: d.groups.get(c).label });
    }
    for (const it of v.items) { add(it.parent || ROOT, it.id); info.set(it.id, Object.assign({ it }, itemSize(it))); }
    // Each edge in the innermost scope holding both ends, between the children holding them.
    const chain = (x) => { const c = [x]; while (x !== ROOT) { x = scopeOf.get(x); c.push(x); } return c; };
    const lifted = new Map(); // scope -> Map(key -> {from, to})
    const route = []; // per visible edge: its scope and the children it was lifted to
    for (const e of v.edges) {
      const ca = chain(e.from), cb = chain(e.to), inB = new Set(cb);
      let i = 1;
      while (!inB.has(ca[i])) i++;
      const s = ca[i], from = ca[i - 1], to = cb[cb.indexOf(s) - 1];
      if (!lifted.has(s)) lifted.set(s, new Map());
      lifted.get(s).set(from + "\u0000" + to, { from, to });
      route.push({ e, s, from, to });
    }
    function layoutScope(s) {
      stats.scopes++;
      const children = kids.get(s) || [];
      for (const c of children) {
        const ci = info.get(c);
        if (ci.cluster) { const L = layoutScope(c); ci.w = Math.max(L.w + 2 * PAD, 7 * ci.label.length + 110); ci.h = L.h + PAD_TOP + PAD; ci.inner = L; }
      }
      const es = [...(lifted.get(s) || new Map()).values()];
      const sig = children.map((c) => c + ":" + Math.round(info.get(c).w) + "x" + Math.round(info.get(c).h)).join("|") + "#" + es.map((e) => e.from + ">" + e.to).join("|");
      const hit = cache.get(s);
      if (hit && hit.sig === sig) { stats.cachedScopes++; return hit; }
      const g = new dagre.graphlib.Graph({ multigraph: false });
      g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 34, marginx: 0, marginy: 0 });
      g.setDefaultEdgeLabel(() => ({}));
      for (const c of children) g.setNode(c, { width: info.get(c).w, height: info.get(c).h });
      for (const e of es) g.setEdge(e.from, e.to);
      stats.dagreCalls++;
      stats.dagreNodes += children.length;
      stats.maxDagreNodes = Math.max(stats.maxDagreNodes, children.length);
      dagre.layout(g);
      // dagre's box holds the nodes, not the bends of long edges: the box is grown to
      // hold both and everything moved to start at 0, 0.
      const gg = g.graph();
      let x0 = 0, y0 = 0, x1 = gg.width || 0, y1 = gg.height || 0;
      for (const ed of g.edges()) for (const q of g.edge(ed).points || []) { x0 = Math.min(x0, q.x); y0 = Math.min(y0, q.y); x1 = Math.max(x1, q.x); y1 = Math.max(y1, q.y); }
      const L = { sig, w: x1 - x0, h: y1 - y0, pos: new Map(), points: new Map() };
      for (const c of children) { const n = g.node(c); L.pos.set(c, { x: n.x - x0, y: n.y - y0 }); }
      for (const ed of g.edges()) L.points.set(ed.v + "\u0000" + ed.w, (g.edge(ed).points || []).map((q) => ({ x: q.x - x0, y: q.y - y0 })));
      cache.set(s, L);
      return L;
    }
    const top = layoutScope(ROOT);
    // Absolute places: a scope's content starts at its origin.
    const origin = new Map([[ROOT, { x: PAD, y: PAD }]]), place = new Map();
    const layouts = new Map([[ROOT, top]]);
    const walk = (s, L) => {
      const o = origin.get(s);
      for (const c of kids.get(s) || []) {
        const p = L.pos.get(c), ci = info.get(c);
        place.set(c, { x: o.x + p.x, y: o.y + p.y, w: ci.w, h: ci.h });
        if (ci.cluster) {
          origin.set(c, { x: o.x + p.x - ci.w / 2 + PAD, y: o.y + p.y - ci.h / 2 + PAD_TOP });
          layouts.set(c, ci.inner);
          walk(c, ci.inner);
        }
      }
    };
    walk(ROOT, top);
    const edges = route.map(({ e, s, from, to }) => {
      const o = origin.get(s);
      const pts = (layouts.get(s).points.get(from + "\u0000" + to) || []).map((p) => ({ x: p.x + o.x, y: p.y + o.y }));
      const a = place.get(e.from), b = place.get(e.to);
      if (e.from !== from) pts.unshift({ x: a.x, y: a.y + a.h / 2 });
      if (e.to !== to) pts.push({ x: b.x, y: b.y - b.h / 2 });
      return { e, pts };
    });
    state.layoutStats = stats;
    return { info, place, edges, w: top.w + 2 * PAD, h: top.h + 2 * PAD };
  }

  function draw() {
    const d = levelData(state.level);
    const t0 = performance.now();
    const v = visible(d);
    const lay = layoutLevel(d, v);
    const tLayout = performance.now();
    svg.textContent = "";
    const root = el("g", {}, svg);
    const clusterLayer = el("g", {}, root), edgeLayer = el("g", {}, root), nodeLayer = el("g", {}, root);
    for (const c of v.clusters) {
      const n = lay.place.get(c);
      const cg = el("g", { class: "cluster", "data-id": c }, clusterLayer);
      el("rect", { x: n.x - n.w / 2, y: n.y - n.h / 2, width: n.w, height: n.h }, cg);
      const tx = el("text", { x: n.x - n.w / 2 + 6, y: n.y - n.h / 2 + 13 }, cg);
      tx.textContent = "\u25be " + lay.info.get(c).label + " (click to close)";
      tx.addEventListener("click", (ev) => { ev.stopPropagation(); closeGroup(c); });
    }
    for (const { e, pts } of lay.edges) {
      if (!pts.length) continue;
      const eg = el("g", { class: "edge" }, edgeLayer);
      el("path", { d: "M" + pts.map((p) => p.x + "," + p.y).join("L"), "marker-end": "url(#arrow)" }, eg);
      const title = el("title", {}, eg);
      title.textContent = bytes(e.bytes) + (e.n > 1 ? " over " + e.n + " edges" : "");
      if (v.edges.length <= 400) {
        const mid = pts[Math.floor(pts.length / 2)];
        const t = el("text", { x: mid.x + 3, y: mid.y }, eg);
        t.textContent = bytes(e.bytes);
      }
    }
    const defs = el("defs", {}, svg);
    const mk = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" }, defs);
    el("path", { d: "M0,0L10,5L0,10z", fill: "#94a3b8" }, mk);
    for (const it of v.items) {
      const id = it.id, n = lay.place.get(id), ni = lay.info.get(id);
      const cls = "node" + (it.group ? " group" : " core-" + it.node.core) + (state.selected === id ? " selected" : "") + (state.matches.has(id) ? " match" : "");
      const ng = el("g", { class: cls, "data-id": id, "data-xy": n.x + "," + n.y, transform: "translate(" + (n.x - n.w / 2) + "," + (n.y - n.h / 2) + ")" }, nodeLayer);
      el("rect", { width: n.w, height: n.h }, ng);
      const t1 = el("text", { x: 6, y: 14 }, ng); t1.textContent = clip(ni.label, n.w);
      const t2 = el("text", { x: 6, y: 27, class: "sub" }, ng); t2.textContent = clip(ni.sub, n.w);
      ng.addEventListener("click", (ev) => { ev.stopPropagation(); it.group ? openGroup(it.id) : select(id); });
    }
    graphBox = { w: lay.w, h: lay.h };
    const t1 = performance.now();
    state.layoutMs = tLayout - t0;
    state.drawMs = t1 - t0;
    state.visibleNodes = v.items.length;
    state.visibleEdges = v.edges.length;
    const ls = state.layoutStats;
    $("status").textContent = LEVELS.find((l) => l.key === state.level).title + ": " + d.nodes.length + " nodes in " + d.groups.size +
      " groups; showing " + v.items.length + " items and " + v.edges.length + " edges, laid out in " + state.layoutMs.toFixed(0) + " ms (" +
      ls.dagreCalls + " of " + ls.scopes + " groups laid out, the largest of " + ls.maxDagreNodes + " items; drawn in " + state.drawMs.toFixed(0) + " ms)";
  }
  function clip(s, w) { const n = Math.floor((w - 10) / 6.2); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }

  function openGroup(id) {
    const d = levelData(state.level);
    for (let g = d.groups.get(id); g; g = g.parent ? d.groups.get(g.parent) : null) state.expanded.add(g.id);
    draw();
    center(id.startsWith("g:") ? firstVisibleIn(id) : id);
  }
  function firstVisibleIn(gid) {
    const d = levelData(state.level);
    for (const n of d.nodes) if (n.path.includes(gid)) { const r = n.path.find((g) => !state.expanded.has(g)); return r || n.id; }
    return gid;
  }
  function closeGroup(id) {
    const d = levelData(state.level);
    for (const g of d.groups.values()) if (g.id === id || isInside(d, g.id, id)) state.expanded.delete(g.id);
    draw();
  }
  function isInside(d, gid, outer) { for (let g = d.groups.get(gid); g; g = g.parent ? d.groups.get(g.parent) : null) if (g.id === outer) return true; return false; }

  // ---- the side panel ------------------------------------------------------------------
  function select(id) {
    const d = levelData(state.level);
    const n = d.byId.get(id);
    if (!n) return;
    for (const g of n.path) state.expanded.add(g);
    state.selected = id;
    draw();
    center(id);
    const rows = Object.entries(n.attrs).filter(([, v]) => v !== "" && v !== undefined)
      .map(([k, v]) => "<tr><td>" + esc(k) + "</td><td>" + esc(v).replace(/\n/g, "<br>") + "</td></tr>").join("");
    const groups = n.path.map((gid) => d.groups.get(gid).label).join(" > ");
    let html = "<h3>" + esc(n.label) + "</h3><table class='attrs'>" + rows + (groups ? "<tr><td>group</td><td>" + esc(groups) + "</td></tr>" : "") + "</table>";
    if (n.links.length) html += "<h4>Links</h4>" + n.links.map((l, i) => "<a class='link' data-i='" + i + "'>" + esc(l.text) + "</a>").join("");
    if (n.body) html += "<h4>Fused body</h4><pre>" + esc(n.body) + "</pre>";
    $("details").innerHTML = html;
    $("details").querySelectorAll("a.link").forEach((a) => a.addEventListener("click", () => follow(n.links[+a.dataset.i])));
  }
  function follow(link) {
    showLevel(link.level);
    if (link.level === "programs") showProgram(link.id);
    else select(link.id);
  }

  // ---- text views: programs and passes -----------------------------------------------
  function showPrograms() {
    const opts = programsOf().map((p) => "<option value='" + p.task + "'>task " + p.task + " " + esc(tasks[p.task].name) + "</option>").join("");
    $("text-view").innerHTML = "<label>Task <select id='prog-task'>" + opts + "</select></label> <span class='hint'>the first block's programs</span><div id='prog-body'></div>";
    $("prog-task").addEventListener("change", (e) => showProgram(+e.target.value));
    if (programsOf().length) showProgram(programsOf()[0].task);
  }
  function showProgram(task) {
    const p = programsOf()[task];
    if (!p) return;
    $("prog-task").value = String(task);
    let html = "";
    for (let i = 0; i < p.names.length; i++) {
      html += "<h4>" + esc(p.names[i]) + " (" + esc(p.cores[i]) + (p.instructions ? ", " + p.instructions[i] + " machine instructions" : "") + ")</h4>";
      html += "<div class='programs'><div><b>PTO</b><pre>" + esc(p.pto[i]) + "</pre></div><div><b>machine</b><pre>" + esc((p.machine || [])[i] || "") + "</pre></div></div>";
    }
    $("prog-body").innerHTML = html;
  }
  function showPasses() {
    const rows = DATA.passes.map((p, i) => "<tr data-i='" + i + "'><td>" + (i + 1) + "</td><td>" + esc(p.name) + "</td><td>" + esc(p.from === p.level ? p.level : p.from + " \u2192 " + p.level) +
      "</td><td>" + p.ms.toFixed(2) + " ms</td><td>+" + p.diff.added + " \u2212" + p.diff.removed + "</td></tr>").join("");
    $("text-view").innerHTML = "<p>Compiled for " + esc(DATA.chip) + " in " + DATA.compile_ms.toFixed(1) + " ms. Click a pass for the change it made to the text of its level.</p>" +
      "<table class='passes'><tr><th>#</th><th>pass</th><th>level</th><th>time</th><th>lines</th></tr>" + rows + "</table><div id='pass-diff'></div>";
    $("text-view").querySelectorAll("tr[data-i]").forEach((tr) => tr.addEventListener("click", () => showDiff(+tr.dataset.i)));
  }
  function showDiff(i) {
    const p = DATA.passes[i];
    $("text-view").querySelectorAll("tr[data-i]").forEach((tr) => tr.classList.toggle("active", +tr.dataset.i === i));
    const d = p.diff;
    let head = "<h4>" + esc(p.name) + ": " + (p.from === p.level ? "diff of the " + esc(p.level) + " level" : "the new " + esc(p.level) + " level (from " + esc(p.from) + ")") + "</h4>";
    if (!d.hunks.length) head += "<p class='hint'>no change to the text of the level</p>";
    if (d.replaced) head += "<p class='hint'>too many changes to align: every changed line is shown removed and re-added</p>";
    if (d.truncated) head += "<p class='hint'>cut at the line budget; the counts are of all lines</p>";
    const body = d.hunks.map((h) => "<span class='hunk'>@@ -" + h.old_start + " +" + h.new_start + " @@</span>\n" + h.lines.map((l) =>
      "<span class='" + (l[0] === "+" ? "add" : l[0] === "-" ? "del" : "") + "'>" + esc(l) + "</span>").join("\n")).join("\n");
    $("pass-diff").innerHTML = head + (body ? "<pre class='diff'>" + body + "</pre>" : "");
  }

  // ---- levels, search, pan and zoom ----------------------------------------------------
  function showLevel(key) {
    const lv = LEVELS.find((l) => l.key === key);
    if (state.level === key) return;
    state.level = key;
    document.querySelectorAll("nav button").forEach((b) => b.classList.toggle("active", b.dataset.level === key));
    const isText = !!lv.text;
    svg.style.display = isText ? "none" : "";
    $("text-view").style.display = isText ? "block" : "none";
    state.selected = null;
    state.matches = new Set();
    $("results").innerHTML = "";
    $("details").innerHTML = "<p class='hint'>Click a node to see its attributes; click a group to open it.</p>";
    if (isText) { lv.text(); $("status").textContent = lv.title; return; }
    const d = levelData(key);
    state.expanded = new Set(d.startOpen);
    draw();
    fit();
    if ($("search").value.trim()) runSearch();
  }
  function runSearch() {
    const lv = LEVELS.find((l) => l.key === state.level);
    const q = $("search").value.trim().toLowerCase();
    const had = state.matches.size > 0;
    state.matches = new Set();
    if (!q || lv.text) { $("results").innerHTML = ""; if (had && !lv.text) draw(); return; }
    const d = levelData(state.level);
    const found = d.nodes.filter((n) => n.search.includes(q));
    for (const n of found) {
      const r = n.path.find((g) => !state.expanded.has(g));
      state.matches.add(r || n.id);
    }
    $("results").innerHTML = "<p>" + found.length + " match" + (found.length === 1 ? "" : "es") + (found.length > 50 ? " (first 50)" : "") + "</p>" +
      found.slice(0, 50).map((n) => "<a class='link' data-id='" + esc(n.id) + "'>" + esc(n.label + " \u2014 " + n.sub) + "</a>").join("");
    $("results").querySelectorAll("a").forEach((a) => a.addEventListener("click", () => select(a.dataset.id)));
    draw();
  }

  let drag = null;
  svg.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y }; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const r = svg.getBoundingClientRect(), s = view.w / Math.max(r.width, 1);
    view.x = drag.vx - (e.clientX - drag.x) * s; view.y = drag.vy - (e.clientY - drag.y) * s;
    setView();
  });
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    const f = e.deltaY > 0 ? 1.15 : 1 / 1.15;
    const mx = view.x + (e.clientX - r.left) / r.width * view.w, my = view.y + (e.clientY - r.top) / r.height * view.h;
    view.w *= f; view.h *= f;
    view.x = mx - (mx - view.x) * f; view.y = my - (my - view.y) * f;
    setView();
  }, { passive: false });

  $("title").textContent = DATA.name + " on " + DATA.chip;
  for (const lv of LEVELS) {
    const b = document.createElement("button");
    b.textContent = lv.title; b.dataset.level = lv.key;
    b.addEventListener("click", () => showLevel(lv.key));
    $("levels").appendChild(b);
  }
  $("search").addEventListener("input", runSearch);
  $("expand-all").addEventListener("click", () => { if (LEVELS.find((l) => l.key === state.level).text) return; for (const g of levelData(state.level).groups.keys()) state.expanded.add(g); draw(); fit(); });
  $("collapse-all").addEventListener("click", () => { if (LEVELS.find((l) => l.key === state.level).text) return; state.expanded = new Set(); draw(); fit(); });
  $("fit").addEventListener("click", fit);
  showLevel("input");
  state.timings.firstViewMs = performance.now() - t0;
  state.ready = true;
})();
