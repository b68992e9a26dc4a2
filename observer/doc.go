// Package observer shows what the leader actors on a node believe, for people
// and for programs: JSON over HTTP, one live web page, Prometheus metrics and
// an MCP server. It reads the actors' ergo:* inspection only (through
// leader.Find and leader.InspectCluster), so it sees exactly what
// `regent inspect` sees and never touches an election's internals.
//
// From one node it reports every cluster that node takes part in: each
// member's role, term, believed leader, view, quorum, unreachable peers, drop
// counters and timers, local and remote members alike, with a per-member
// error when a member cannot be read. It flags disagreement: members that
// believe in different leaders or terms, several leaders at once, a stuck
// candidate, an unclustered member. A sampler polls the clusters at a fixed
// interval to feed the live page and to measure failovers, and keeps each
// cluster's leadership timeline (Timeline: who led which term from when to
// when, failovers with their leaderless time, handovers, elections that
// took several campaigns, members gone and when), bounded in memory and
// served at /api/timeline. Members are read through leader.ParseInspection,
// and agreement is leader.Agree.
//
// Metrics (Handler's /metrics, or Handler.Collector in a registry of your
// own) are the sampler's latest reading, labelled by cluster
// and member node: regent_leader_is_leader, _term, _view_size, _view_epoch,
// _quorum, _member_up (gauges), regent_leader_elections_started_total,
// _elections_won_total, _leadership_changes_total, _confirm_denied_total,
// regent_leader_messages_dropped_total{reason} and
// regent_leader_slow_callbacks_total{callback} (counters, as the member
// counts them since it started). regent_observer_failover_seconds is the
// observer's own histogram, labelled by cluster and observing node. The
// node's own network counters are regent_network_peers,
// _handshakes_in_flight (gauges), _handshakes_rejected_total{reason},
// _dropped_total{reason} and _name_collisions_total. Every
// node's observer reports every member it can read, so scraping one node
// shows a whole cluster; Prometheus's instance label tells the observers apart.
//
// Callers must know:
//  1. NewHandler and Serve start a sampling goroutine; call Close on what they
//     return when done, or the goroutine (and any open event stream) lives on.
//  2. Reading a cluster inspects every member, remote ones over the network,
//     and wakes each; a member that does not answer costs up to the
//     runtime's request timeout (gen.DefaultRequestTimeout) per read. The
//     sampler spends about a tenth of the time reading: once a reading has
//     taken a tenth of the sampling interval, it pauses after each further
//     cluster nine times as long as reading it took (an interval at most),
//     so a node of many clusters is read a little at a time, over several
//     intervals (on a 2-core machine, about 10 s for 1,000 clusters of 5;
//     the live update's interval_ms and collect_ms say so). The page, the
//     JSON API and /metrics serve the latest sample, so neither clients nor
//     scrapes add readings of their own: before the first sample, API
//     requests wait for it (up to their context) and a scrape has the
//     node's own counters only. /api/actors reads each local actor, paced
//     the same way. The MCP tools read one cluster
//     alone when asked about one (CollectCluster), and answer a question
//     about every cluster from the latest sample under a Handler, or read
//     spread over time like the sampler when served on their own.
//  3. Failover durations are measured from samples, so they are only as fine
//     as the time between two readings of the cluster: the sampling
//     interval (see WithSampleInterval), or on a node of many clusters a
//     reading's time (2). A failover lasts from the first sample that finds
//     no answering leader, in a cluster that had one, to the first sample
//     that finds one; a new leader or term seen with no leaderless sample in
//     between counts as a failover as long as the time between the two
//     samples. Either way the value is within the time between two
//     readings of the true one. The observer cannot tell a leader it cannot
//     reach from a leader that is gone, so a partition between the observer
//     and the leader alone reads as a failover.
//  4. The handler serves no authentication: mount it behind whatever guards
//     the rest of the server, or bind Serve to a loopback address. It refuses
//     a foreign Host header on a loopback connection (DNS rebinding), and
//     Serve bounds what clients hold (timeouts, WithMaxConnections) so they
//     cannot take the file descriptors the node needs for its peers.
//  5. The timeline starts when the handler does and follows samples: a
//     change shorter than the time between two readings of the cluster (3)
//     may be missed, and a handover (the
//     old leader kept answering and kept its quorum between two samples) is
//     told from a failover by what the samples show, not by what happened
//     inside the members.
//
// Not guaranteed: consistency across members. Each member is read at a
// slightly different moment, so a report taken during an election can show a
// disagreement that has already resolved.
package observer
