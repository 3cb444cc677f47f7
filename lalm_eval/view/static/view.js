/* lalm-eval view: client-side filters over window.LALM_VIEW, rows rendered a page at a time. */
(function () {
  "use strict";
  var D = window.LALM_VIEW;
  var PAGE = 50;
  var MAX_CHOICES = 40;
  var rows = D.rows;
  var shown = 0;
  var matched = [];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function answerText(a) {
    if (!a) return "";
    return (a.response || "") + " " + (a.filtered || "");
  }
  function fmt(v) {
    if (typeof v === "number") return Math.round(v * 10000) / 10000;
    if (v === null || v === undefined) return "—";
    return typeof v === "object" ? JSON.stringify(v) : String(v);
  }

  // per-row values the filters read, computed once
  var metaKeys = {};
  rows.forEach(function (r) {
    r._text = [r.question, r.target].concat(r.answers.map(answerText)).join(" ").toLowerCase();
    r._failures = r.answers.map(function (a) { return a ? (a.failure || "") : "missing"; });
    r._truncated = r.answers.some(function (a) { return a && a.truncated; });
    r._mean = {};
    D.metrics.forEach(function (m) {
      var s = 0, n = 0;
      r.answers.forEach(function (a) {
        var v = a && a.metrics ? a.metrics[m] : null;
        if (typeof v === "number") { s += v; n += 1; }
      });
      r._mean[m] = n ? s / n : null;
    });
    Object.keys(r.meta).forEach(function (k) {
      var v = r.meta[k];
      if (v !== null && typeof v === "object") return;
      var set = metaKeys[k] || (metaKeys[k] = {});
      set[String(v)] = true;
    });
  });

  var filters = document.getElementById("filters");
  function select(id, label, values) {
    var wrap = el("label", null, label + " ");
    var s = el("select");
    s.id = id;
    s.appendChild(el("option", null, "all")).value = "";
    values.forEach(function (v) { var o = el("option", null, v === "" ? "(empty)" : v); o.value = "=" + v; s.appendChild(o); });
    wrap.appendChild(s);
    filters.appendChild(wrap);
    s.addEventListener("change", apply);
    return s;
  }
  function sortValues(vs) {
    return vs.sort(function (a, b) {
      var x = Number(a), y = Number(b);
      return (!isNaN(x) && !isNaN(y) && a !== "" && b !== "") ? x - y : (a < b ? -1 : a > b ? 1 : 0);
    });
  }
  var taskSel = select("f-task", "task", Object.keys(D.counts).sort());
  var metaSel = {};
  Object.keys(metaKeys).sort().forEach(function (k) {
    var vs = Object.keys(metaKeys[k]);
    if (vs.length > 1 && vs.length <= MAX_CHOICES) metaSel[k] = select("f-meta-" + k, k, sortValues(vs));
  });
  var failureKinds = {};
  rows.forEach(function (r) { r._failures.forEach(function (f) { if (f) failureKinds[f] = true; }); });
  var failSel = select("f-failure", "failure kind", Object.keys(failureKinds).sort());
  function checkbox(id, label) {
    var wrap = el("label");
    var c = el("input");
    c.type = "checkbox"; c.id = id;
    wrap.appendChild(c); wrap.appendChild(document.createTextNode(label));
    filters.appendChild(wrap);
    c.addEventListener("change", apply);
    return c;
  }
  var disagreeBox = checkbox("f-disagree", "runs disagree");
  var missingBox = checkbox("f-missing", "missing in a run");
  var truncBox = checkbox("f-truncated", "truncated");
  var search = el("input");
  search.type = "search"; search.id = "f-search"; search.placeholder = "search question / answers";
  filters.appendChild(search);
  var timer = null;
  search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(apply, 120); });
  var sortSel = el("select");
  sortSel.id = "sort";
  sortSel.appendChild(el("option", null, "task, doc id")).value = "";
  D.metrics.forEach(function (m) {
    sortSel.appendChild(el("option", null, m + " ↑ (mean over runs)")).value = "+" + m;
    sortSel.appendChild(el("option", null, m + " ↓ (mean over runs)")).value = "-" + m;
  });
  var sortWrap = el("label", null, "sort ");
  sortWrap.appendChild(sortSel);
  filters.appendChild(sortWrap);
  sortSel.addEventListener("change", apply);

  function apply() {
    var task = taskSel.value.slice(1);
    var metaWant = [];
    Object.keys(metaSel).forEach(function (k) { if (metaSel[k].value) metaWant.push([k, metaSel[k].value.slice(1)]); });
    var fail = failSel.value.slice(1);
    var q = search.value.trim().toLowerCase();
    matched = rows.filter(function (r) {
      if (task && r.task !== task) return false;
      for (var i = 0; i < metaWant.length; i++) {
        if (!(metaWant[i][0] in r.meta) || String(r.meta[metaWant[i][0]]) !== metaWant[i][1]) return false;
      }
      if (fail && r._failures.indexOf(fail) < 0) return false;
      if (disagreeBox.checked && !r.disagree) return false;
      if (missingBox.checked && !r.missing) return false;
      if (truncBox.checked && !r._truncated) return false;
      if (q && r._text.indexOf(q) < 0) return false;
      return true;
    });
    var s = sortSel.value;
    if (s) {
      var m = s.slice(1), dir = s[0] === "-" ? -1 : 1;
      matched = matched.slice().sort(function (a, b) {
        var x = a._mean[m], y = b._mean[m];
        if (x === null) return y === null ? 0 : 1;
        if (y === null) return -1;
        return dir * (x - y);
      });
    }
    document.getElementById("rows").textContent = "";
    shown = 0;
    more();
  }

  function more() {
    var box = document.getElementById("rows");
    var end = Math.min(shown + PAGE, matched.length);
    var frag = document.createDocumentFragment();
    for (var i = shown; i < end; i++) frag.appendChild(renderRow(matched[i]));
    box.appendChild(frag);
    shown = end;
    document.getElementById("count").textContent =
      matched.length + " of " + rows.length + " docs match; showing " + shown;
    document.getElementById("more").hidden = shown >= matched.length;
    window.LALM_VIEW_STATE = { matched: matched.length, shown: shown };
  }
  document.getElementById("more").addEventListener("click", more);

  function judgeTexts(details) {
    var out = [];
    Object.keys(details || {}).sort().forEach(function (m) {
      var d = details[m];
      if (d && typeof d === "object") {
        var rest = {};
        Object.keys(d).forEach(function (k) { if (k !== "comment") rest[k] = d[k]; });
        if (typeof d.comment === "string") out.push(m + " (judge): " + d.comment); // the judge's reasoning
        if (Object.keys(rest).length) out.push(m + ": " + JSON.stringify(rest));
      }
      else if (d !== null && d !== undefined) out.push(m + ": " + d);
    });
    return out;
  }

  function renderAnswer(a, i) {
    var run = D.runs[i];
    if (!a) {
      var miss = el("div", "answer missing");
      miss.appendChild(el("div", "label", run.label));
      miss.appendChild(el("div", "text", "missing: this run has no sample for this doc"));
      return miss;
    }
    var box = el("div", "answer");
    box.appendChild(el("div", "label", run.label));
    if (a.failure || a.error) box.appendChild(el("div", "chip bad", "failure: " + (a.failure || "") + " " + (a.error || "")));
    box.appendChild(el("div", "text", a.response === undefined ? "(no response)" : a.response));
    if (a.filtered !== undefined && a.filtered !== a.response) {
      box.appendChild(el("div", "label", "filtered"));
      box.appendChild(el("div", "text", a.filtered));
    }
    if (a.seen_s !== undefined) {
      box.appendChild(el("span", a.truncated ? "chip warn" : "chip",
        "heard " + fmt(a.seen_s) + " of " + fmt(a.audio_s) + " s" + (a.truncated ? " (truncated)" : "")));
    }
    var t = el("table", "metrics");
    Object.keys(a.metrics || {}).sort().forEach(function (m) {
      var tr = el("tr");
      tr.appendChild(el("td", null, m));
      tr.appendChild(el("td", null, fmt(a.metrics[m])));
      t.appendChild(tr);
    });
    box.appendChild(t);
    judgeTexts(a.metric_details).forEach(function (txt) { box.appendChild(el("div", "judge", txt)); });
    return box;
  }

  function renderRow(r) {
    var card = el("div", "sample");
    card.dataset.task = r.task;
    card.dataset.doc = String(r.doc_id);
    var head = el("div", "head");
    head.appendChild(el("span", null, r.task + " · doc " + r.doc_id));
    Object.keys(r.meta).sort().forEach(function (k) { head.appendChild(el("span", "chip", k + ": " + fmt(r.meta[k]))); });
    if (r.disagree) head.appendChild(el("span", "chip warn", "runs disagree"));
    if (r.missing) head.appendChild(el("span", "chip bad", "missing in " + r.missing + " run(s)"));
    card.appendChild(head);
    if (r.audio && r.audio.length) {
      r.audio.forEach(function (src) {
        var au = el("audio");
        au.controls = true; au.preload = "none"; au.src = src;
        card.appendChild(au);
      });
    } else {
      card.appendChild(el("div", "noaudio", "no audio: " + (r.audio_missing || "none")));
    }
    card.appendChild(el("div", "label", "question"));
    card.appendChild(el("div", "text", r.question));
    card.appendChild(el("div", "label", "reference"));
    card.appendChild(el("div", "text", fmt(r.target)));
    var answers = el("div", "answers");
    r.answers.forEach(function (a, i) { answers.appendChild(renderAnswer(a, i)); });
    card.appendChild(answers);
    return card;
  }

  var c = D.clips, nMissing = 0;
  Object.keys(c.missing).forEach(function (k) { nMissing += c.missing[k]; });
  document.getElementById("clip-summary").textContent =
    rows.length + " docs, " + D.runs.length + " run(s); " + c.written + " audio clips, " +
    nMissing + " doc(s) without audio" +
    Object.keys(c.missing).map(function (k) { return "; " + c.missing[k] + ": " + k; }).join("");
  apply();
  window.LALM_VIEW_STATE.first_render_ms = performance.now(); // since navigation start: data.js parsed, first page shown
})();
