/* xlt results page renderer (inlined into report.html / compare.html; no network, no library).
 * Reads the page description from <script type="application/json" id="xlt-data"> and draws it.
 * Every text goes through textContent / createTextNode: data is never parsed as HTML. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var page = JSON.parse(document.getElementById("xlt-data").textContent);
  var app = document.getElementById("app");
  var tip = document.getElementById("tip");

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v, d) { return isNum(v) ? v.toFixed(d === undefined ? 1 : d) : (v === null || v === undefined ? "" : String(v)); }
  function slug(s) { return String(s).toLowerCase().replace(/[^a-z0-9_]+/g, "-").replace(/^-+|-+$/g, ""); }

  function showTip(text, ev) {
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 430) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }
  function hideTip() { tip.hidden = true; }

  /* ---- cells ---- */
  function cellText(c, row) {
    var v = row[c.key];
    switch (c.kind) {
      case "ci": return isNum(v) ? fmt(v) + " [" + fmt(row[c.low]) + ", " + fmt(row[c.high]) + "]" : "";
      case "pm": return isNum(v) ? fmt(v, 2) + " ± " + fmt(row[c.std], 2) : "";
      case "diff": return isNum(v) ? (v > 0 ? "+" : "") + fmt(v) + (row[c.sig] ? " ★" : "") : "";
      case "int": return isNum(v) ? String(Math.round(v)) : fmt(v);
      case "num": return fmt(v, c.digits);
      case "bool": return v === true ? "yes" : v === false ? "no" : "";
      default: return v === null || v === undefined ? "" : String(v);
    }
  }
  function cellClass(c, row) {
    var v = row[c.key], cls = [];
    if (["ci", "pm", "diff", "int", "num"].indexOf(c.kind) >= 0) cls.push("num");
    if (c.kind === "diff" && isNum(v)) { cls.push(v > 0 ? "pos" : v < 0 ? "neg" : ""); if (row[c.sig]) cls.push("sig"); }
    return cls.join(" ");
  }
  function compare(a, b, numeric) {
    var na = a === null || a === undefined || (numeric && !isNum(a));
    var nb = b === null || b === undefined || (numeric && !isNum(b));
    if (na || nb) return na && nb ? 0 : na ? 1 : -1;  /* missing values last */
    if (numeric) return a - b;
    return String(a).localeCompare(String(b));
  }

  /* ---- table: sort by clicking a header; filters (selects) and a text search ---- */
  function drawTable(b, parent) {
    var box = el("div", {"class": "tableblock", id: "tb-" + slug(b.id)});
    if (b.title) box.appendChild(el("h3", null, b.title));
    var state = {key: null, desc: false, filters: {}, q: ""};
    var controls = el("div", {"class": "controls"});
    var filterCols = b.columns.filter(function (c) { return c.filter; });
    filterCols.forEach(function (c) {
      var values = {};
      b.rows.forEach(function (r) { values[String(r[c.key])] = true; });
      var keys = Object.keys(values).sort();
      if (keys.length < 2) return;
      var lab = el("label", null, c.label + " ");
      var sel = el("select", {"data-filter": c.key});
      sel.appendChild(el("option", {value: ""}, "all"));
      keys.forEach(function (k) { sel.appendChild(el("option", {value: k}, k)); });
      sel.addEventListener("change", function () { state.filters[c.key] = sel.value; render(); });
      lab.appendChild(sel);
      controls.appendChild(lab);
    });
    if (b.search) {
      var inp = el("input", {type: "search", placeholder: "search", "data-search": "1"});
      inp.addEventListener("input", function () { state.q = inp.value.toLowerCase(); render(); });
      controls.appendChild(inp);
    }
    var count = el("span", {"class": "count"});
    controls.appendChild(count);
    if (b.search || controls.querySelector("select")) box.appendChild(controls);
    var wrap = el("div", {"class": "tablewrap"});
    var t = el("table", {"data-table": b.id});
    var thead = el("thead"), hr = el("tr");
    var ths = b.columns.map(function (c) {
      var th = el("th", {"data-key": c.key, title: "click to sort"}, c.label);
      th.addEventListener("click", function () {
        state.desc = state.key === c.key ? !state.desc : ["text", "bool"].indexOf(c.kind) < 0;
        state.key = c.key;
        render();
      });
      hr.appendChild(th);
      return th;
    });
    thead.appendChild(hr);
    t.appendChild(thead);
    var tbody = el("tbody");
    t.appendChild(tbody);
    wrap.appendChild(t);
    box.appendChild(wrap);
    parent.appendChild(box);
    var textCols = b.columns.filter(function (c) { return c.kind === "text"; });

    function render() {
      var rows = b.rows.filter(function (r) {
        for (var k in state.filters) if (state.filters[k] && String(r[k]) !== state.filters[k]) return false;
        if (state.q) {
          var hay = textCols.map(function (c) { return r[c.key]; }).join(" ").toLowerCase();
          if (hay.indexOf(state.q) < 0) return false;
        }
        return true;
      });
      if (state.key !== null) {
        var c = b.columns.filter(function (x) { return x.key === state.key; })[0];
        var numeric = ["text", "bool"].indexOf(c.kind) < 0;
        rows = rows.slice().sort(function (x, y) {
          var r = compare(x[c.key], y[c.key], numeric);
          var missing = x[c.key] == null || y[c.key] == null || (numeric && !(isNum(x[c.key]) && isNum(y[c.key])));
          return state.desc && !missing ? -r : r;  /* missing values stay last both ways */
        });
      }
      ths.forEach(function (th) {
        th.className = th.getAttribute("data-key") === state.key ? (state.desc ? "sorted-desc" : "sorted-asc") : "";
      });
      var frag = document.createDocumentFragment();
      rows.forEach(function (r) {
        var tr = el("tr");
        b.columns.forEach(function (c) {
          var td = el("td", {"class": cellClass(c, r)}, cellText(c, r));
          if (c.tip && r[c.tip]) td.title = r[c.tip];
          tr.appendChild(td);
        });
        frag.appendChild(tr);
      });
      tbody.textContent = "";
      tbody.appendChild(frag);
      count.textContent = rows.length + " of " + b.rows.length + " rows";
    }
    render();
  }

  /* ---- bar chart (inline SVG) with hover tooltips; a select picks the series ---- */
  function drawBars(b, parent) {
    var box = el("div", {"class": "chartblock", id: "ch-" + slug(b.id)});
    box.appendChild(el("h3", null, b.title));
    var sel = null;
    if (b.series.length > 1) {
      var controls = el("div", {"class": "controls"});
      var lab = el("label", null, "show ");
      sel = el("select", {"data-series": b.id});
      b.series.forEach(function (s, i) { sel.appendChild(el("option", {value: String(i)}, s.name)); });
      lab.appendChild(sel);
      controls.appendChild(lab);
      box.appendChild(controls);
    }
    var holder = el("div", {"class": "chart"});
    box.appendChild(holder);
    parent.appendChild(box);

    function render(i) {
      var bars = b.series[i].bars, n = bars.length;
      var vals = [];
      bars.forEach(function (d) { [d.value, d.low, d.high].forEach(function (v) { if (isNum(v)) vals.push(v); }); });
      var lo = b.signed ? Math.min(0, Math.min.apply(null, vals.concat([0]))) : 0;
      var hi = b.signed ? Math.max(0, Math.max.apply(null, vals.concat([0]))) : Math.max(100, Math.max.apply(null, vals.concat([0])));
      if (b.signed) { var m = Math.max(Math.abs(lo), Math.abs(hi), 1); lo = -m; hi = m; }
      var bw = Math.max(6, Math.min(28, Math.floor(1100 / Math.max(n, 1)))), left = 40, top = 8, h = 220, bottom = 70;
      var w = left + n * bw + 10;
      var y = function (v) { return top + (hi - v) / (hi - lo) * h; };
      var s = svg("svg", {width: w, height: top + h + bottom, role: "img"});
      [lo, (lo + hi) / 2, hi].forEach(function (t) {
        s.appendChild(svg("line", {"class": "axis", x1: left - 4, x2: w - 6, y1: y(t), y2: y(t), "stroke-opacity": 0.25}));
        var tx = svg("text", {x: left - 6, y: y(t) + 3, "text-anchor": "end"});
        tx.textContent = fmt(t, 0);
        s.appendChild(tx);
      });
      bars.forEach(function (d, k) {
        var x = left + k * bw;
        if (isNum(d.value)) {
          var yv = y(d.value), base = y(b.signed ? 0 : lo);
          var r = svg("rect", {"class": "bar" + (d.value < 0 ? " neg" : "") + (d.sig === false ? " nsig" : ""),
                               x: x + 1, width: bw - 2, y: Math.min(yv, base), height: Math.max(1, Math.abs(base - yv)),
                               "data-label": d.label});
          var t = svg("title", {});
          t.textContent = d.tip || (d.label + ": " + fmt(d.value));
          r.appendChild(t);
          r.addEventListener("mousemove", function (ev) { showTip(d.tip || (d.label + ": " + fmt(d.value)), ev); });
          r.addEventListener("mouseleave", hideTip);
          s.appendChild(r);
          if (isNum(d.low) && isNum(d.high)) {
            s.appendChild(svg("line", {"class": "ci", x1: x + bw / 2, x2: x + bw / 2, y1: y(d.low), y2: y(d.high)}));
          }
        }
        var lx = x + bw / 2, ly = top + h + 6;
        var lt = svg("text", {x: lx, y: ly, transform: "rotate(60 " + lx + " " + ly + ")"});
        lt.textContent = d.label;
        s.appendChild(lt);
      });
      if (isNum(b.chance)) s.appendChild(svg("line", {"class": "chance", x1: left, x2: w - 6, y1: y(b.chance), y2: y(b.chance)}));
      if (b.signed) s.appendChild(svg("line", {"class": "axis", x1: left, x2: w - 6, y1: y(0), y2: y(0)}));
      holder.textContent = "";
      holder.appendChild(s);
    }
    if (sel) sel.addEventListener("change", function () { render(+sel.value); });
    render(0);
  }

  /* ---- findings ---- */
  function drawFindings(b, parent) {
    var cls = {"holds": "holds", "does not hold": "fails", "cannot be tested": "untestable"};
    var counts = {};
    b.items.forEach(function (f) { counts[f.verdict] = (counts[f.verdict] || 0) + 1; });
    parent.appendChild(el("p", {"class": "sub"}, Object.keys(counts).map(function (k) { return counts[k] + " " + k; }).join(" · ")));
    b.items.forEach(function (f) {
      var d = el("div", {"class": "finding " + (cls[f.verdict] || ""), "data-finding": f.id});
      var head = el("div");
      head.appendChild(el("span", {"class": "verdict"}, f.verdict));
      head.appendChild(el("b", null, f.claim));
      head.appendChild(el("span", {"class": "paper"}, " — " + f.paper));
      d.appendChild(head);
      if (f.paper_says) d.appendChild(el("div", {"class": "quote"}, "The paper: " + f.paper_says));
      d.appendChild(el("div", {"class": "why"}, f.why));
      if (f.needs) d.appendChild(el("div", {"class": "test"}, "Needs: " + f.needs));
      if (f.test) d.appendChild(el("div", {"class": "test"}, "Test: " + f.test));
      if (f.numbers && f.numbers.length) {
        var det = el("details");
        det.appendChild(el("summary", null, "numbers"));
        var keys = Object.keys(f.numbers[0]);
        drawTable({id: "finding-" + f.id, columns: keys.map(function (k) {
          var v = f.numbers[0][k];
          return {key: k, label: k, kind: typeof v === "number" ? "num" : typeof v === "boolean" ? "bool" : "text", digits: 3};
        }), rows: f.numbers}, det);
        d.appendChild(det);
      }
      parent.appendChild(d);
    });
  }

  function drawKv(b, parent) {
    if (b.cards) {
      var cards = el("div", {"class": "cards"});
      b.rows.forEach(function (r) { var c = el("div", {"class": "card"}); c.appendChild(el("b", null, r[1])); c.appendChild(document.createTextNode(r[0])); cards.appendChild(c); });
      parent.appendChild(cards);
      return;
    }
    var t = el("table", {"class": "kv"});
    b.rows.forEach(function (r) { var tr = el("tr"); tr.appendChild(el("td", null, r[0])); tr.appendChild(el("td", null, r[1])); t.appendChild(tr); });
    parent.appendChild(t);
  }

  /* ---- items side by side in two languages (every text through textContent; dir per language) ---- */
  function drawItems(b, parent) {
    if (b.title) parent.appendChild(el("h3", null, b.title));
    b.items.forEach(function (it) {
      var box = el("div", {"class": "item", "data-item": it.item, "data-language": it.language});
      box.appendChild(el("div", {"class": "itemhead"}, it.item + " — wrong in " + it.language + "; right in " +
        fmt(100 * it["weakest share right elsewhere"], 0) + "% or more of " + it["other languages"] + " other languages"));
      var row = el("div", {"class": "pair"});
      (it.texts || []).forEach(function (t) {
        var side = el("div", {"class": "side", dir: t.dir, lang: t.language});
        side.appendChild(el("div", {"class": "lang", dir: "ltr"}, t.language));
        if (t.passage) side.appendChild(el("p", {"class": "passage"}, t.passage));
        side.appendChild(el("p", {"class": "question"}, t.question));
        var ol = el("ol");
        t.options.forEach(function (o, k) { ol.appendChild(el("li", {"class": k === t.gold ? "gold" : ""}, o + (k === t.gold ? " ✓" : ""))); });
        side.appendChild(ol);
        if (t.picked && t.picked.length) side.appendChild(el("div", {"class": "picked", dir: "ltr"}, "picked: " + t.picked.join("; ")));
        row.appendChild(side);
      });
      box.appendChild(row);
      parent.appendChild(box);
    });
  }

  var DRAW = {table: drawTable, bars: drawBars, findings: drawFindings, kv: drawKv, items: drawItems,
              text: function (b, p) { p.appendChild(el("p", {"class": b.cls || ""}, b.text)); }};

  document.title = page.title;
  app.textContent = "";
  app.appendChild(el("h1", null, page.title));
  if (page.subtitle) app.appendChild(el("div", {"class": "sub"}, page.subtitle));
  var meta = el("div", {"class": "meta"});
  (page.meta || []).forEach(function (m) { var s = el("span"); s.appendChild(el("b", null, m[0] + ":")); s.appendChild(document.createTextNode(m[1])); meta.appendChild(s); });
  app.appendChild(meta);
  if (page.notes && page.notes.length) {
    var nb = el("div", {"class": "notes"});
    nb.appendChild(el("b", null, "Comparability and data notes"));
    var ul = el("ul");
    page.notes.forEach(function (n) { ul.appendChild(el("li", null, n)); });
    nb.appendChild(ul);
    app.appendChild(nb);
  }
  var toc = el("nav", {"class": "toc"});
  page.sections.forEach(function (s) { toc.appendChild(el("a", {href: "#sec-" + slug(s.title)}, s.title)); });
  app.appendChild(toc);
  page.sections.forEach(function (s) {
    var sec = el("section", {id: "sec-" + slug(s.title)});
    sec.appendChild(el("h2", null, s.title));
    s.blocks.forEach(function (b) { DRAW[b.type](b, sec); });
    app.appendChild(sec);
  });
  document.body.setAttribute("data-ready", "1");
})();
