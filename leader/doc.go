// Package leader is Regent's election actor: embed Actor in your own type,
// implement Init (and usually HandleBecomeLeader and HandleBecomeFollower),
// spawn it with SpawnRegister on every node of a cluster, and exactly one of
// them leads per cluster. It is a Raft-style election with no log: terms, one
// vote per term, heartbeats and a majority quorum over an agreed view — a
// membership the leader replicates and changes one member at a time — with a
// MinClusterSize floor, a GhostTTL after which a leader removes a silent
// member, Join and Leave routed through the leader, and HandleConfirmLeader
// to gate leadership on an external authority. The protocol itself is a pure
// state machine (internal/election); this package binds it to a process,
// runs your callbacks and answers inspection. docs/membership.md says why
// this keeps one leader per cluster.
//
// The caller's duties:
//  1. Register NetworkTypes (and ErrorTypes) on every node before spawning the
//     actor: node.Network().RegisterTypes(leader.NetworkTypes()). Init refuses
//     to start otherwise.
//  2. Spawn the actor with SpawnRegister under the same name on every node;
//     peers reach each other by that name.
//  3. Return Options from Init with ClusterID set and MinClusterSize decided:
//     above half the members that will ever take part, two groups can never
//     both form a cluster; a view below it has no visible leader, so a
//     three-member cluster with the default 3 has none once a member is gone
//     for longer than GhostTTL, while five members stay led through two such
//     losses (use 2 for three members).
//  4. Feed membership: Bootstrap for peers known at deploy time, Join from a
//     handler (not from Init) for peers your discovery finds, re-run on a
//     timer, and Leave for peers your discovery stops listing. Do not
//     replace a majority of the members faster than GhostTTL without Leave:
//     removals need a majority of the current view.
//  5. Start leader-only work in HandleBecomeLeader and stop it in
//     HandleBecomeFollower, which runs on every transition into follower
//     (with a zero PID when no leader is known); make it idempotent. An actor
//     that dies (an error, Kill, its node stopping) gets Terminate instead,
//     so stop the work there too.
//  6. Call the Actor's methods only from the actor's own callbacks; from
//     outside, use JoinPeer, LeavePeer, StepDownLeader, TransferLeadershipTo
//     (local), and ReadMember, Members, InspectCluster and MessageSubscribe
//     (from any node).
//  7. Read FencingToken right before each irreversible action, carry it, and
//     let the resource refuse an older one. It (like IsLeader) turns 0 the
//     moment this member can no longer be sure it leads, even before it
//     steps down; that narrows the window, the resource closes it: an
//     election alone cannot stop a superseded leader that learns late.
//
// What is not guaranteed: one cluster per deployment when MinClusterSize is
// at or below half the members (groups that never heard of each other form
// one each until they meet); that a superseded leader knows it at once; any
// replicated state but the view; persistence of term, vote and view unless
// Options.StateFile is set; anything about external resources.
//
// Beyond the leader document, each with a safe default: PreVote and leader
// stickiness, quorum evidence from replies, fast failover when a leader is
// reported down, graceful handover (StepDown, TransferLeadership, and on a
// normal stop), durable term and vote, fencing tokens, a preferred leader,
// re-confirmation of an external lease (ConfirmInterval), change
// notifications for code that does not embed the actor, a same-host
// shortcut through an mmfcell file, and heartbeat coalescing for processes
// that host many clusters over the same nodes (DisableHeartbeatCoalescing).
// docs/guarantees.md says what each one guarantees.
//
// Reading a member from outside: ParseInspection turns the ergo:* keys into
// an Inspection (Role, terms, views, times), ReadMember fetches a member's
// view and inspection in one round trip from any node, and Agree is the one
// rule for which leader enough members recognise, over the Beliefs that
// inspections, transitions and notifications give.
package leader
