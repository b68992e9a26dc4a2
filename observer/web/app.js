// The observer's live page: renders each server-sent report as one card per
// cluster. Plain DOM, no dependencies, no build step.
"use strict";

(function () {
  var clustersEl = document.getElementById("clusters");
  var statusEl = document.getElementById("status");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function setStatus(state) {
    statusEl.textContent = state;
    statusEl.className = "status " + state;
    statusEl.dataset.state = state;
  }

  // ago turns "2026-...Z (12ms ago)" into "12ms ago"; "never" stays.
  function ago(v) {
    if (!v) return "—";
    var m = /\(([^)]*)\)\s*$/.exec(v);
    return m ? m[1] : v;
  }

  function pill(text, cls) {
    return el("span", "pill" + (cls ? " " + cls : ""), text);
  }

  // majority returns the most common value of key among members that answered.
  function majority(members, key) {
    var counts = {}, best = null, bestN = 0;
    members.forEach(function (m) {
      if (m.error) return;
      var k = String(m[key]);
      counts[k] = (counts[k] || 0) + 1;
      if (counts[k] > bestN) { best = k; bestN = counts[k]; }
    });
    return best;
  }

  function banner(cluster) {
    var problems = cluster.problems || [];
    if (cluster.error) {
      return el("div", "banner bad", "Cannot read this cluster: " + cluster.error);
    }
    if (problems.length === 0) {
      return el("div", "banner ok", "Healthy: one leader, every member agrees on it and on the term.");
    }
    var serious = problems.some(function (p) {
      return p.kind !== "unreachable";
    });
    var b = el("div", "banner " + (serious ? "bad" : "warn"));
    b.dataset.problems = problems.map(function (p) { return p.kind; }).join(" ");
    b.appendChild(el("strong", null, serious ? "Disagreement" : "Attention"));
    var ul = el("ul");
    problems.forEach(function (p) {
      var li = el("li", null, p.message);
      li.dataset.kind = p.kind;
      ul.appendChild(li);
    });
    b.appendChild(ul);
    return b;
  }

  function row(m, leaderBelief, term) {
    var tr = el("tr");
    tr.dataset.node = m.node;
    tr.dataset.role = m.error ? "unreadable" : m.state;
    tr.dataset.term = m.error ? "" : String(m.term);
    if (!m.error && m.state === "leader") tr.classList.add("is-leader");
    if (m.error) tr.classList.add("unanswered");
    else if (m.leader_node !== leaderBelief || String(m.term) !== term) tr.classList.add("disagrees");

    var node = el("td");
    node.appendChild(el("span", "node", m.node));
    if (m.self) node.appendChild(el("span", "self", "(this node)"));
    tr.appendChild(node);

    var role = el("td");
    role.appendChild(el("span", "role " + (m.error ? "unknown" : m.state), m.error ? "unreadable" : m.state));
    tr.appendChild(role);

    if (m.error) {
      var td = el("td", "err", m.error);
      td.colSpan = 7;
      tr.appendChild(td);
      return tr;
    }
    tr.appendChild(el("td", "num term-col", m.term));
    tr.appendChild(el("td", "leader-col", m.leader_node || "none"));
    tr.appendChild(el("td", "num", m.view_size + " / " + m.quorum + " (min " + m.min_cluster_size + ")"));

    var unreachable = el("td");
    if (m.unreachable.length === 0) unreachable.textContent = "—";
    m.unreachable.forEach(function (u) { unreachable.appendChild(pill(u, "bad")); });
    tr.appendChild(unreachable);

    var dropped = el("td");
    var reasons = Object.keys(m.dropped || {}).sort();
    if (reasons.length === 0) dropped.textContent = "—";
    reasons.forEach(function (r) { dropped.appendChild(pill(r + " " + m.dropped[r])); });
    tr.appendChild(dropped);

    var timers = el("td");
    timers.appendChild(pill("election", m.timers.election_armed ? "on" : ""));
    timers.appendChild(pill("heartbeat", m.timers.heartbeat_armed ? "on" : ""));
    timers.appendChild(el("div", "small", "hb in " + ago(m.timers.heartbeat_in_last) + " · out " + ago(m.timers.heartbeat_out_last)));
    tr.appendChild(timers);

    tr.appendChild(el("td", "num small",
      m.elections_started + " started · " + m.elections_won + " won · " + m.leadership_changes + " changes" +
      (m.confirm_denied ? " · " + m.confirm_denied + " denied" : "")));
    return tr;
  }

  function card(c) {
    var sec = el("section", "cluster");
    sec.dataset.cluster = c.cluster;
    sec.dataset.leaders = String((c.leaders || []).length);
    sec.dataset.leader = c.leader || "";
    sec.dataset.term = String(c.term);

    var head = el("div", "cluster-head");
    head.appendChild(el("h2", null, "Cluster " + c.cluster));
    var fact = function (label, value) {
      var f = el("span", "fact", label + " ");
      f.appendChild(el("b", null, value));
      head.appendChild(f);
    };
    fact("leader", c.leader || (c.leaders.length ? c.leaders.join(", ") : "none"));
    fact("term", c.term);
    fact("members", c.members.length);
    fact("via", c.via);
    sec.appendChild(head);
    sec.appendChild(banner(c));

    var leaderBelief = majority(c.members, "leader_node");
    var term = majority(c.members, "term");
    var table = el("table");
    var hr = el("tr");
    ["Member", "Role", "Term", "Believes leader", "View / quorum", "Unreachable", "Dropped", "Timers", "Elections"].forEach(function (h) {
      hr.appendChild(el("th", null, h));
    });
    var thead = el("thead");
    thead.appendChild(hr);
    table.appendChild(thead);
    var tbody = el("tbody");
    c.members.forEach(function (m) { tbody.appendChild(row(m, leaderBelief, term)); });
    table.appendChild(tbody);
    sec.appendChild(table);
    return sec;
  }

  function render(update) {
    var report = update.report;
    document.getElementById("node").textContent = report.node;
    document.getElementById("updated").textContent = new Date(report.collected_at).toLocaleTimeString();
    var errEl = document.getElementById("error");
    errEl.hidden = !update.error;
    errEl.textContent = update.error || "";
    document.getElementById("empty").hidden = !!update.error || report.clusters.length > 0;
    var frag = document.createDocumentFragment();
    report.clusters.forEach(function (c) { frag.appendChild(card(c)); });
    clustersEl.replaceChildren(frag);
    document.body.dataset.updates = String((parseInt(document.body.dataset.updates || "0", 10)) + 1);
  }

  var events = new EventSource("api/events");
  events.onopen = function () { setStatus("live"); };
  events.onerror = function () { setStatus("lost"); };
  events.addEventListener("report", function (e) {
    setStatus("live");
    try {
      render(JSON.parse(e.data));
    } catch (err) {
      var errEl = document.getElementById("error");
      errEl.hidden = false;
      errEl.textContent = "Cannot show this update: " + err;
    }
  });
})();
