// Package leader is Regent's election actor: embed Actor in your own type,
// implement Init (and usually HandleBecomeLeader and HandleBecomeFollower),
// spawn it with SpawnRegister on every node of a cluster, and exactly one of
// them leads per cluster. It is a Raft-style election with no log: terms, one
// vote per term, heartbeats and a majority quorum over a dynamic view, with a
// MinClusterSize floor, a GhostTTL for unreachable peers, Join and Leave, and
// HandleConfirmLeader to gate leadership on an external authority. The
// protocol itself is a pure state machine (internal/election); this package
// binds it to a process, runs your callbacks and answers inspection.
//
// The caller's duties:
//  1. Register NetworkTypes (and ErrorTypes) on every node before spawning the
//     actor: node.Network().RegisterTypes(leader.NetworkTypes()). Init refuses
//     to start otherwise.
//  2. Spawn the actor with SpawnRegister under the same name on every node;
//     peers reach each other by that name.
//  3. Return Options from Init with ClusterID set and MinClusterSize decided:
//     a cluster has a leader only while at least that many members are in
//     its view, so the default 3 keeps five nodes led through two losses but
//     three nodes through none that outlasts GhostTTL. Set it above half the
//     expected node count to rule out two leaders from disjoint groups.
//  4. Feed membership: Bootstrap for peers known at deploy time, Join from a
//     handler (not from Init) for peers your discovery finds, re-run on a
//     timer, and Leave for peers your discovery stops listing.
//  5. Start leader-only work in HandleBecomeLeader and stop it in
//     HandleBecomeFollower, which runs on every transition into follower
//     (with a zero PID when no leader is known); make it idempotent. An actor
//     that dies (an error, Kill, its node stopping) gets Terminate instead,
//     so stop the work there too.
//  6. Call the Actor's methods only from the actor's own callbacks; from
//     outside, use JoinPeer, LeavePeer, StepDownLeader, TransferLeadershipTo
//     (local), and ReadMember, Members, InspectCluster and MessageSubscribe
//     (from any node).
//  7. Carry FencingToken with every irreversible action and let the resource
//     refuse an older one: an election alone cannot stop a superseded leader
//     that learns late.
//
// What is not guaranteed: one leader per deployment (views that diverged at
// a cold start elect separately until they learn of each other, and members
// that really leave lower the quorum with them); that a superseded leader
// knows it at once; any replicated state; persistence of the term and vote
// unless Options.StateFile is set; anything about external resources.
//
// Beyond the leader document, each with a safe default: PreVote and leader
// stickiness, quorum evidence from replies, fast failover when a leader is
// reported down, graceful handover (StepDown, TransferLeadership, and on a
// normal stop), durable term and vote, fencing tokens, a preferred leader,
// re-confirmation of an external lease (ConfirmInterval), change
// notifications for code that does not embed the actor, and a same-host
// shortcut through an mmfcell file. docs/guarantees.md says what each one
// guarantees.
//
// Reading a member from outside: ParseInspection turns the ergo:* keys into
// an Inspection (Role, terms, views, times), ReadMember fetches a member's
// view and inspection in one round trip from any node, and Agree is the one
// rule for which leader enough members recognise, over the Beliefs that
// inspections, transitions and notifications give.
package leader
