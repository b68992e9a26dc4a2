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

  // plural writes "1 change", "2 changes".
  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // ms renders a Go duration in nanoseconds as milliseconds or seconds.
  function ms(ns) {
    var v = ns / 1e6;
    if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 0 : 1) + " s";
    return (v >= 10 ? Math.round(v) : v.toFixed(1)) + " ms";
  }

  // clock renders an RFC 3339 time as the browser's local time of day.
  function clock(t) {
    return new Date(t).toLocaleTimeString();
  }

  // short drops the host: m1@127.0.0.1 reads m1.
  function short(node) {
    var i = (node || "").indexOf("@");
    return i < 0 ? node : node.slice(0, i);
  }

  // timersInWords says what a member's timers are doing, for its role.
  function timersInWords(m) {
    var t = m.timers;
    var wait = ms(t.election_timeout_min_ns) + "–" + ms(t.election_timeout_max_ns);
    switch (m.state) {
      case "leader":
        return "Sends a heartbeat every " + ms(t.heartbeat_interval_ns) +
          (t.heartbeat_out_ago ? "; last sent " + t.heartbeat_out_ago + " ago." : ".");
      case "follower":
        return (t.heartbeat_in_ago ? "Last heartbeat from the leader " + t.heartbeat_in_ago + " ago; " : "No heartbeat yet; ") +
          "campaigns if none comes for " + wait + ".";
      case "candidate":
        return "Campaigning; tries again after " + wait + " if no one wins.";
      case "unclustered":
        return "Leads nothing here: " + (m.unclustered_because || "its view is below the floor of " + m.min_cluster_size) + ".";
    }
    return "";
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

  function row(m, leaderBelief, term, gone) {
    var tr = el("tr");
    tr.dataset.node = m.node;
    tr.dataset.role = m.error ? (gone ? "gone" : "unreadable") : m.state;
    tr.dataset.term = m.error ? "" : String(m.term);
    if (!m.error && m.state === "leader") tr.classList.add("is-leader");
    if (m.error) tr.classList.add("unanswered");
    else if (m.leader_node !== leaderBelief || String(m.term) !== term) tr.classList.add("disagrees");

    var node = el("td");
    node.appendChild(el("span", "node", short(m.node)));
    node.appendChild(el("div", "small", m.node));
    if (m.self) node.appendChild(el("span", "self", "(this node)"));
    tr.appendChild(node);

    var role = el("td");
    var label = m.error ? (gone ? "gone" : "unreadable") : m.state;
    role.appendChild(el("span", "role " + (m.error ? "unknown" : m.state), label));
    if (gone) role.appendChild(el("div", "small", "since " + clock(gone.since)));
    tr.appendChild(role);

    if (m.error) {
      var td = el("td", "err", m.error || "");
      td.colSpan = 8;
      tr.appendChild(td);
      return tr;
    }
    tr.appendChild(el("td", "num term-col", m.term));
    tr.appendChild(el("td", "leader-col", m.leader_node ? short(m.leader_node) : "none"));
    tr.appendChild(el("td", "num", m.view_size + " / " + m.quorum + " (min " + m.min_cluster_size + ")"));

    var view = el("td", "small view-col");
    if (!m.view || !m.view.lineage) {
      view.textContent = "none yet";
    } else {
      view.appendChild(el("span", null, "epoch " + m.view.epoch + ", term " + m.view.term));
      if (!m.view.agreed) view.appendChild(pill("proposed", "bad"));
      else if (!m.view.committed) view.appendChild(pill("not yet committed"));
      if (m.pending_change) view.appendChild(el("div", null, "changing: " + m.pending_change));
      (m.lagging || []).forEach(function (n) { view.appendChild(pill(short(n) + " lags", "bad")); });
    }
    tr.appendChild(view);

    var unreachable = el("td");
    if (m.unreachable.length === 0) unreachable.textContent = "—";
    m.unreachable.forEach(function (u) { unreachable.appendChild(pill(short(u), "bad")); });
    tr.appendChild(unreachable);

    var dropped = el("td");
    var reasons = Object.keys(m.dropped || {}).sort();
    if (reasons.length === 0) dropped.textContent = "—";
    reasons.forEach(function (r) { dropped.appendChild(pill(r + " " + m.dropped[r])); });
    tr.appendChild(dropped);

    tr.appendChild(el("td", "timers small", timersInWords(m)));

    tr.appendChild(el("td", "num small elections",
      plural(m.elections_started, "election") + " started · " + m.elections_won + " won · " +
      plural(m.leadership_changes, "leadership change") +
      (m.confirm_denied ? " · " + m.confirm_denied + " denied" : "")));
    return tr;
  }

  // goneRow is a member that stopped answering and that no view lists any more.
  function goneRow(g) {
    return row({node: g.node, error: g.last_error || "no longer in any view"}, null, null, g);
  }

  // timelineSection draws a cluster's leadership history: a bar of tenures
  // (who led which term, leaderless gaps in grey) and the events in words.
  function timelineSection(t) {
    var sec = el("div", "timeline");
    sec.appendChild(el("h3", null, "Leadership timeline"));
    if (!t) {
      sec.appendChild(el("div", "small", "No history yet."));
      return sec;
    }
    var now = Date.now();
    var start = new Date(t.since).getTime();
    var span = Math.max(now - start, 1);
    var bar = el("div", "tenures");
    var cursor = start;
    (t.tenures || []).forEach(function (x) {
      var from = new Date(x.from).getTime();
      var to = x.to ? new Date(x.to).getTime() : now;
      if (from > cursor) {
        var gap = el("span", "tenure gap");
        gap.style.flexGrow = String(from - cursor);
        gap.title = "no leader";
        bar.appendChild(gap);
      }
      var seg = el("span", "tenure" + (x.to ? "" : " current"), short(x.leader) + " · t" + x.term);
      seg.style.flexGrow = String(Math.max(to - from, span / 200));
      seg.title = x.leader + " led term " + x.term + " from " + clock(x.from) + (x.to ? " to " + clock(x.to) : ", still leading");
      seg.dataset.leader = x.leader;
      seg.dataset.term = String(x.term);
      bar.appendChild(seg);
      cursor = to;
    });
    sec.appendChild(bar);
    var list = el("ol", "events");
    (t.events || []).slice().reverse().slice(0, 12).forEach(function (e) {
      var li = el("li", "event " + e.kind);
      li.dataset.kind = e.kind;
      li.dataset.leader = e.leader || "";
      li.appendChild(el("span", "when", clock(e.at)));
      li.appendChild(el("span", "what", e.message));
      list.appendChild(li);
    });
    sec.appendChild(list);
    sec.appendChild(el("div", "small",
      "Sampled since " + clock(t.since) + "; durations are within the time between two readings of the cluster (the sampling interval, longer on a node of many clusters). " +
      "A handover is a move from one sample to the next while the old leader kept answering; a failover, one after it stopped answering, lost its quorum or left samples without a leader."));
    return sec;
  }

  function card(c, t) {
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
    fact("leader", c.leader ? short(c.leader) : (c.leaders.length ? c.leaders.map(short).join(", ") : "none"));
    fact("term", c.term);
    fact("members", c.members.length);
    fact("read via", short(c.via_node) + " (this node)");
    sec.appendChild(head);
    sec.appendChild(banner(c));

    var leaderBelief = majority(c.members, "leader_node");
    var term = majority(c.members, "term");
    var table = el("table");
    var hr = el("tr");
    var heads = {
      "Member": "", "Role": "", "Term": "", "Believes leader": "",
      "View / quorum": "members in its view / votes needed to lead (the floor: MinClusterSize)",
      "Agreed view": "the version of the membership this member holds: epoch counts changes, term is the leader that stamped it; a member whose view differs lags",
      "Unreachable": "members whose connection dropped, still in the view until GhostTTL",
      "Dropped": "protocol messages ignored, by reason",
      "Timers": "what the member waits for: a leader's heartbeat, its own campaign, or its view to grow",
      "Elections": "counted since this member started"
    };
    Object.keys(heads).forEach(function (h) {
      var th = el("th", null, h);
      if (heads[h]) th.title = heads[h];
      hr.appendChild(th);
    });
    var thead = el("thead");
    thead.appendChild(hr);
    table.appendChild(thead);
    var tbody = el("tbody");
    var gone = {};
    ((t && t.gone) || []).forEach(function (g) { gone[g.node] = g; });
    var listed = {};
    c.members.forEach(function (m) {
      listed[m.node] = true;
      tbody.appendChild(row(m, leaderBelief, term, m.error ? gone[m.node] : null));
    });
    Object.keys(gone).sort().forEach(function (n) {
      if (!listed[n]) tbody.appendChild(goneRow(gone[n]));
    });
    table.appendChild(tbody);
    sec.appendChild(table);
    sec.appendChild(timelineSection(t));
    return sec;
  }

  function render(update) {
    var report = update.report;
    document.getElementById("node").textContent = report.node;
    // A large node is read over seconds (collect_ms): the page is as new as
    // the reading's end, and says how long the reading took when it shows.
    var took = update.collect_ms || 0;
    var updated = new Date(new Date(report.collected_at).getTime() + took).toLocaleTimeString();
    document.getElementById("updated").textContent = took >= 1000 ? updated + " (read over " + (took / 1000).toFixed(1) + " s)" : updated;
    var errEl = document.getElementById("error");
    errEl.hidden = !update.error;
    errEl.textContent = update.error || "";
    document.getElementById("empty").hidden = !!update.error || report.clusters.length > 0;
    var timelines = {};
    (update.timelines || []).forEach(function (t) { timelines[t.cluster] = t; });
    var frag = document.createDocumentFragment();
    report.clusters.forEach(function (c) { frag.appendChild(card(c, timelines[c.cluster])); });
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
