package election

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// stateFields lists every field of the structs a Core holds (stateTypes),
// saying how Clone copies it and whether AppendStateKey encodes it. A field
// added to one of those structs, or to a new struct they come to hold,
// fails TestCloneAndStateKeyListEveryField until it is listed here, after
// Clone copies it (anything holding a pointer, map or slice needs its own
// line in Clone) and AppendStateKey encodes it (anything that can change
// what the core does next).
var stateFields = map[string]string{
	"Core.cfg":                    "copied, Bootstrap cloned, Rand replaced; not keyed: fixed for a life",
	"Core.self":                   "value; keyed",
	"Core.term":                   "value; keyed",
	"Core.votedFor":               "value; keyed",
	"Core.view":                   "shared: a View is immutable; keyed",
	"Core.store":                  "not copied: nil in the clone, its taken slots being immutable views; not keyed: memory only",
	"Core.termChangedAt":          "value; not keyed: inspection only",
	"Core.hardDirty":              "value; keyed",
	"Core.role":                   "value; keyed",
	"Core.leader":                 "value; keyed",
	"Core.leaderID":               "value; keyed",
	"Core.leaderHeardAt":          "value; keyed as set and as leaderLive(now)",
	"Core.committed":              "value; keyed",
	"Core.peers":                  "deep copy; keyed peer by peer, and as their order by last answer",
	"Core.withdrawn":              "cloned; keyed as the nodes still withdrawn at now",
	"Core.removals":               "cloned; keyed",
	"Core.outside":                "deep copy; keyed",
	"Core.camp":                   "deep copy; keyed",
	"Core.lead":                   "deep copy; keyed",
	"Core.next":                   "value; keyed",
	"Core.deadLeader":             "value; keyed",
	"Core.deferred":               "deep copy; keyed while answerDeferred would answer it at now",
	"deferredRequest.from":        "value; keyed",
	"deferredRequest.msg":         "Declared cloned; keyed but ClusterID (fixed for a cluster)",
	"deferredRequest.at":          "value; keyed as within ElectionTimeoutMin at now",
	"MessageRequestVote.Header":   "value; keyed",
	"MessageRequestVote.PreVote":  "value; keyed",
	"MessageRequestVote.Transfer": "value; keyed",
	"MessageRequestVote.Declared": "cloned; keyed",
	"MessageRequestVote.Sent":     "value; keyed: the candidate's clock, echoed as it is",
	"Header.ClusterID":            "value; not keyed: fixed for a cluster",
	"Header.Term":                 "value; keyed",
	"Header.From":                 "value; keyed",
	"Header.Started":              "value; keyed: an identity, not a clock reading",
	"Header.View":                 "value; keyed",
	"Core.campaignHeld":           "value; keyed",
	"Core.hostShortcut":           "value; keyed",
	"Core.probeBackoff":           "value; not keyed: it only sets when the probe timer fires, and timers are keyed as armed",
	"Core.reported":               "value; keyed",
	"Core.rare":                   "deep copy; keyed through its fields, as their zero values when nil",
	"Core.armed":                  "array of values; keyed",
	"coreRare.handover":           "avoid cloned; keyed",
	"coreRare.denials":            "value; keyed, and as declining at now",
	"coreRare.lastDenied":         "shared immutable error; not keyed: inspection only",
	"coreRare.leaderErr":          "shared immutable error; not keyed: inspection only",
	"coreRare.storageErr":         "shared immutable error; keyed as set",
	"coreRare.fatal":              "shared immutable error; keyed as set",
	"Core.timers":                 "array of values; not keyed: the armed generation is the current one",
	"Core.electionStart":          "value; keyed as set and as due at now",
	"Core.electionWait":           "value; keyed as due at now",
	"Core.electionLazy":           "value; keyed",
	"Core.ready":                  "deep copy; keyed as pending or not",
	"Core.heartbeatInLast":        "value; not keyed: inspection only",
	"Core.heartbeatOutLast":       "value; not keyed: inspection only",
	"Core.lastGranted":            "cloned; not keyed: inspection only",
	"Core.declared":               "shared: never changed once made; not keyed: declaredSet's last answer, made again when it no longer stands",
	"Core.stats":                  "dropped cloned; not keyed but lastDeniedAt, as declining at now",

	"View.Stamp":           "value; keyed",
	"View.Members":         "shared: immutable; keyed",
	"memberStore.views":    "not copied (see Core.store)",
	"memberStore.used":     "not copied (see Core.store)",
	"memberStore.roomFree": "not copied (see Core.store)",
	"memberStore.room":     "not copied (see Core.store)",
	"memberStore.lead":     "not copied (see Core.store); Core.lead, when it points here, is copied",
	"ViewStamp.Lineage":    "value; keyed",
	"ViewStamp.Key":        "value; keyed",
	"ViewStamp.Agreed":     "value; keyed",
	"Lineage.Term":         "value; keyed",
	"Lineage.Node":         "value; keyed",
	"ViewKey.Term":         "value; keyed",
	"ViewKey.Epoch":        "value; keyed",

	"peerTable.list":   "deep copy; keyed peer by peer",
	"peerTable.sorted": "cloned; keyed as the peers' order",

	"peer.id":                "value; keyed",
	"peer.pid":               "value; keyed",
	"peer.declared":          "value; keyed",
	"peer.answered":          "value; keyed",
	"peer.unreachableSince":  "value; keyed as set",
	"peer.lastInbound":       "value; keyed as set, as evidence, alive and heard within GhostTTL at now, and by recency",
	"peer.inboundSinceReply": "value; keyed",
	"peer.lastReply":         "value; keyed as set, as evidence and within the window at now, and by recency",
	"peer.lastSend":          "value; keyed as set and as evidence at now",
	"peer.sendFailing":       "value; keyed",
	"peer.startedNanos":      "value; keyed: an identity, not a clock reading",
	"peer.steadySince":       "value; keyed as set and as steady for PreferStableFor at now",
	"peer.ackedLineage":      "value; keyed",
	"peer.ackedKey":          "value; keyed",
	"peer.ackedAgreed":       "value; keyed",
	"peer.ackedTerm":         "value; keyed",
	"peer.memberSince":       "value; keyed as set and as silent past GhostTTL at now",
	"peer.declines":          "value; keyed",
	"peer.reportedIsPID":     "value; keyed as reportedPID",
	"peer.rare":              "deep copy; keyed through its fields",

	"peerRare.ended":    "value; keyed as set: the text only explains",
	"peerRare.endedPID": "value; keyed",
	"peerRare.sendErr":  "shared immutable error; not keyed: inspection only",
	"peerRare.reported": "value; keyed as reportedPID",

	"outsideCluster.stamp":  "value; keyed",
	"outsideCluster.leader": "value; keyed",

	"campaign.term":      "value; keyed",
	"campaign.preVote":   "value; keyed",
	"campaign.transfer":  "value; keyed",
	"campaign.formation": "value; keyed",
	"campaign.answers":   "cloned; keyed",
	"campaign.reported":  "cloned, its sets shared: never changed once reported; keyed",
	"campaign.newest":    "shared: a View is immutable; keyed",
	"campaign.holders":   "cloned; keyed",

	"leadership.committedInTerm": "value; keyed",
	"leadership.change":          "value; not keyed: inspection only",
	"leadership.adds":            "cloned; keyed with whether each peer answered since",
	"leadership.removes":         "cloned; keyed as nodes: the reasons only explain",
	"leadership.awaitingConfirm": "value; keyed",
	"leadership.visible":         "value; keyed",
	"leadership.confirmedLate":   "value; keyed as set and as awaiting answers at now (awaitsAnswers)",

	"admission.id":    "value; keyed",
	"admission.since": "value; keyed as the peer's last message coming after it or not",

	"nextCampaign.skipPreVote": "value; keyed",
	"nextCampaign.transfer":    "value; keyed",

	"reportedState.role":   "value; keyed",
	"reportedState.leader": "value; keyed",

	"handoverState.target":       "value; keyed",
	"handoverState.leadingSince": "value; keyed as set and as past ElectionTimeoutMax at now",
	"handoverState.avoid":        "cloned; keyed as failures and as standing at now",

	"avoidance.until":    "value; keyed as standing at now",
	"avoidance.failures": "value; keyed",

	"counters.dropped":            "cloned; not keyed: a statistic",
	"counters.confirmDenied":      "value; not keyed: a statistic",
	"counters.lastDeniedAt":       "value; keyed as declining at now (Core.declines)",
	"counters.electionsStarted":   "value; not keyed: a statistic",
	"counters.electionsWon":       "value; not keyed: a statistic",
	"counters.leaderChanges":      "value; not keyed: a statistic",
	"counters.rounds":             "value; not keyed: a statistic",
	"counters.quorumLost":         "value; not keyed: a statistic",
	"counters.conflicts":          "value; not keyed: a statistic",
	"counters.staleTimers":        "value; not keyed: a statistic",
	"counters.preferredTransfers": "value; not keyed: a statistic",
	"counters.viewChanges":        "value; not keyed: a statistic",
	"counters.failedHandovers":    "value; not keyed: a statistic",
}

// stateTypes lists the structs of this package that a Core holds, found by
// following its fields (through pointers, slices, arrays and maps); Config
// and Ready are listed as whole fields, fixed for a life and drained.
func stateTypes() []reflect.Type {
	pkg := reflect.TypeFor[Core]().PkgPath()
	skip := map[reflect.Type]bool{reflect.TypeFor[Config](): true, reflect.TypeFor[Ready](): true}
	var out []reflect.Type
	var visit func(reflect.Type)
	visit = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			if typ.Kind() == reflect.Map {
				visit(typ.Key())
			}
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != pkg || skip[typ] || slices.Contains(out, typ) {
			return
		}
		out = append(out, typ)
		for f := range typ.Fields() {
			visit(f.Type)
		}
	}
	visit(reflect.TypeFor[Core]())
	return out
}

func TestCloneAndStateKeyListEveryField(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range stateTypes() {
		for f := range typ.Fields() {
			name := typ.Name() + "." + f.Name
			seen[name] = true
			assert.Contains(t, stateFields, name,
				"%s is new: copy it in Clone (clone.go) when it holds a pointer, map or slice, encode it in AppendStateKey when it can change what the core does (a timestamp as the predicates the core computes on it at now), then list it in stateFields", name)
		}
	}
	for name := range stateFields {
		assert.True(t, seen[name], "stateFields lists %s, which no longer exists: take it out of Clone, AppendStateKey and stateFields", name)
	}
}

// immutable lists what a clone may share with its original because no one
// changes it once made (see View): a *View, and the member lists a view, a
// formation's report or the last declared set holds, named as struct.field
// ("[]" for a map's values). Whatever such a shared thing holds is still walked, so a mutable
// field added to View is caught.
var immutable = map[string]bool{
	"*View":               true,
	"View.Members":        true,
	"campaign.reported[]": true,
	"Core.declared":       true,
}

// sharedMemory walks a and b in parallel and lists the paths at which they
// share a pointer, map or slice that immutable does not allow; owner names
// the struct field (or map's values) a and b were read from. Times (their
// Location is immutable), interfaces (errors, effects and message values,
// immutable once boxed), functions and the random source (checked
// separately) are not followed.
func sharedMemory(path, owner string, a, b reflect.Value) []string {
	switch a.Type() {
	case reflect.TypeFor[time.Time](), reflect.TypeFor[*rand.Rand]():
		return nil
	}
	allowed := immutable[owner] || (a.Kind() == reflect.Pointer && a.Type().Elem().PkgPath() == reflect.TypeFor[Core]().PkgPath() &&
		immutable["*"+a.Type().Elem().Name()])
	var out []string
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() && !allowed {
			out = append(out, path)
		}
		out = append(out, sharedMemory(path, "", a.Elem(), b.Elem())...)
	case reflect.Map:
		if a.Len() > 0 && a.Pointer() == b.Pointer() && !allowed {
			out = append(out, path)
		}
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); bv.IsValid() {
				out = append(out, sharedMemory(fmt.Sprintf("%s[%v]", path, k), owner+"[]", a.MapIndex(k), bv)...)
			}
		}
	case reflect.Slice:
		if a.Cap() > 0 && a.Pointer() == b.Pointer() && !allowed {
			out = append(out, path)
		}
		for i := range min(a.Len(), b.Len()) {
			out = append(out, sharedMemory(fmt.Sprintf("%s[%d]", path, i), "", a.Index(i), b.Index(i))...)
		}
	case reflect.Array:
		for i := range a.Len() {
			out = append(out, sharedMemory(fmt.Sprintf("%s[%d]", path, i), "", a.Index(i), b.Index(i))...)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			name := a.Type().Field(i).Name
			out = append(out, sharedMemory(path+"."+name, a.Type().Name()+"."+name, a.Field(i), b.Field(i))...)
		}
	}
	return out
}

// busyCores are three members between them holding every kind of memory a
// Core has, each with an undrained Ready: a formation candidate with
// reports, a withdrawal and a ghost; a leader with an admission and a
// removal queued behind a pending change; a follower that avoids a member
// which failed its handover.
func busyCores(t *testing.T) map[string]*harness {
	cand := newHarness(t, 5, func(c *Config) { c.MinClusterSize = 5 })
	require.NoError(t, cand.c.Leave(cand.now, nodeName(6)))
	cand.c.PeerDown(cand.now, peerPID(5), gen.ErrNoConnection) // unknown yet: a drop counted
	cand.step(5, MessageVote{Header: hdr(5, 0, ViewStamp{}), PreVote: true})
	cand.c.PeerDown(cand.now, peerPID(5), gen.ErrNoConnection)
	term := cand.campaign()
	cand.step(2, MessageVote{Header: hdr(2, term, ViewStamp{}), Granted: true, Declared: members(5)})
	proposed := newView(ViewStamp{Lineage: Lineage{Term: 1, Node: nodeName(3)}, Key: ViewKey{Term: 1, Epoch: 1}}, members(5))
	cand.step(3, MessageVote{Header: hdr(3, term, proposed.Stamp), Granted: true, View: proposed})
	require.NotNil(t, cand.c.camp, "n1 still campaigns")
	require.NotNil(t, cand.c.camp.newest, "a grant reported a view")

	lead := newAgreed(t, 4, nil)
	lead.lead(2, 3)
	require.NoError(t, lead.c.Join(lead.now, procID(nodeName(9))))
	require.NoError(t, lead.c.Leave(lead.now, nodeName(4))) // proposed at once
	require.NoError(t, lead.c.Leave(lead.now, nodeName(5))) // queued behind it
	lead.collect()
	require.NotEmpty(t, lead.c.lead.adds)
	require.NotEmpty(t, lead.c.lead.removes)
	require.NotEmpty(t, lead.c.removals)

	follow := newAgreed(t, 3, nil)
	leadTerm := follow.lead(2, 3)
	require.NoError(t, follow.c.StepDown(follow.now))
	follow.collect()
	other := 2 // another member than the target takes over
	if follow.c.few().handover.target == nodeName(2) {
		other = 3
	}
	follow.heartbeat(other, leadTerm, follow.stamp(), nil)
	require.NotEmpty(t, follow.c.few().handover.avoid, "the handover target did not take over")

	for _, h := range []*harness{cand, lead, follow} {
		h.c.Step(h.now, peerPID(3), MessageRequestVote{Header: hdr(3, h.c.Term(), h.stamp()), PreVote: true})
		h.c.Step(h.now, peerPID(7), MessageHeartbeat{Header: Header{ClusterID: "other", Term: 1, From: procID(nodeName(7))}})
		require.True(t, h.c.HasReady())
	}
	return map[string]*harness{"a formation candidate": cand, "a leader changing the view": lead, "a follower avoiding a member": follow}
}

func TestCloneSharesNoMemoryWithTheOriginal(t *testing.T) {
	for name, h := range busyCores(t) {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			clone := h.c.Clone(r)
			t.Run("no pointer, map or slice of the clone is the original's", func(t *testing.T) {
				assert.Empty(t, sharedMemory("Core", "", reflect.ValueOf(h.c), reflect.ValueOf(clone)))
			})
			t.Run("the clone draws from the source it was given", func(t *testing.T) {
				assert.Same(t, r, clone.cfg.Rand)
				assert.Same(t, h.c.cfg.Rand, h.c.Clone(nil).cfg.Rand, "a nil source shares the original's")
			})
			t.Run("the clone starts with the original's state and pending Ready", func(t *testing.T) {
				assert.Equal(t, h.c.AppendStateKey(nil, h.now), clone.AppendStateKey(nil, h.now))
				assert.Equal(t, h.c.Status(h.now), clone.Status(h.now))
				assert.Equal(t, h.c.Ready(), clone.Ready())
			})
		})
	}
}

func TestStateKeyHoldsNoAbsoluteTime(t *testing.T) {
	// run makes n1 follow n2 in an agreed view, then lose n3's connection.
	run := func(start time.Time) (*Core, time.Time) {
		cfg := testConfig(nodeName(1), 1)
		cfg.Bootstrap = members(3)
		c, err := New(cfg, peerPID(1), HardState{Term: 1, View: agreedView(3, 1, 1)}, start)
		require.NoError(t, err)
		s := agreedView(3, 1, 1).Stamp
		c.Step(start, peerPID(2), MessageHeartbeat{Header: hdr(2, 1, s), Committed: s.Key})
		c.Step(start, peerPID(3), MessageVote{Header: hdr(3, 1, s), PreVote: true})
		now := start.Add(20 * time.Millisecond)
		c.PeerDown(now, peerPID(3), gen.ErrNoConnection)
		for c.HasReady() {
			c.Ready()
		}
		return c, now
	}
	a, aNow := run(epoch)
	b, bNow := run(epoch.Add(1000 * time.Hour))
	t.Run("the same history shifted in time has the same key", func(t *testing.T) {
		assert.Equal(t, a.AppendStateKey(nil, aNow), b.AppendStateKey(nil, bNow))
	})
	t.Run("the key sees a live leader's heartbeat grow old", func(t *testing.T) {
		assert.NotEqual(t, a.AppendStateKey(nil, aNow), a.AppendStateKey(nil, aNow.Add(time.Second)))
	})
	t.Run("the key sees a ghost's silence pass GhostTTL", func(t *testing.T) {
		at := aNow.Add(time.Second)
		assert.NotEqual(t, a.AppendStateKey(nil, at), a.AppendStateKey(nil, at.Add(a.cfg.GhostTTL)))
	})
	t.Run("the key sees a term", func(t *testing.T) {
		c, now := run(epoch)
		c.Step(now, peerPID(2), MessageHeartbeat{Header: hdr(2, 2, agreedView(3, 1, 1).Stamp)})
		for c.HasReady() {
			c.Ready()
		}
		assert.NotEqual(t, a.AppendStateKey(nil, aNow), c.AppendStateKey(nil, now))
	})
	t.Run("the key sees which member answered last", func(t *testing.T) {
		c, now := run(epoch)
		later := now.Add(time.Millisecond)
		c.Step(later, peerPID(3), MessageVote{Header: hdr(3, 1, agreedView(3, 1, 1).Stamp), PreVote: true})
		d, _ := run(epoch)
		d.Step(later, peerPID(2), MessageVote{Header: hdr(2, 1, agreedView(3, 1, 1).Stamp), PreVote: true})
		d.Step(later, peerPID(3), MessageVote{Header: hdr(3, 1, agreedView(3, 1, 1).Stamp), PreVote: true})
		for _, x := range []*Core{c, d} {
			for x.HasReady() {
				x.Ready()
			}
		}
		assert.NotEqual(t, c.AppendStateKey(nil, later), d.AppendStateKey(nil, later))
	})
}

// twin copies a network whose members draw from srcs (by node), giving the
// copy's members clones that draw from copies of those sources.
func twin(nw *network, srcs map[gen.Atom]*rand.PCG) (*network, map[gen.Atom]*rand.PCG) {
	out := *nw
	out.nodes, out.names, out.queue = map[gen.Atom]*simNode{}, slices.Clone(nw.names), slices.Clone(nw.queue)
	out.cut, out.leads, out.visible, out.agreed = maps.Clone(nw.cut), maps.Clone(nw.leads), maps.Clone(nw.visible), maps.Clone(nw.agreed)
	outSrcs := map[gen.Atom]*rand.PCG{}
	for name, sn := range nw.nodes {
		src := *srcs[name] // a PCG is two words: copying it copies the stream
		outSrcs[name] = &src
		cp := *sn
		cp.core = sn.core.Clone(rand.New(&src))
		cp.timers = maps.Clone(sn.timers)
		cp.effects, cp.sent = nil, nil
		out.nodes[name] = &cp
	}
	return &out, outSrcs
}

// describe renders v for comparison, pointers followed: two runs that did
// the same print the same, wherever their memory lies.
func describe(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// churn drives nw with random deliveries, losses, timers, cuts, downs,
// restarts, joins and leaves drawn from seed, and reports each member's
// state after every step. observe, when set, sees the network after every
// step, before its effects and messages are cleared.
func churn(t *testing.T, nw *network, srcs map[gen.Atom]*rand.PCG, seed uint64, steps int, observe func()) []string {
	r := rand.New(rand.NewPCG(seed, 3))
	pick := func() *simNode { return nw.nodes[nw.names[r.IntN(len(nw.names))]] }
	var trace []string
	for i := range steps {
		switch r.IntN(12) {
		case 0, 1, 2, 3:
			if len(nw.queue) > 0 {
				nw.deliver(r.IntN(len(nw.queue)))
			}
		case 4:
			if len(nw.queue) > 0 {
				j := r.IntN(len(nw.queue))
				nw.queue = slices.Delete(nw.queue, j, j+1)
			}
		case 5, 6:
			if sn, a, ok := nw.nextTimer(); ok {
				nw.fire(sn, a)
			}
		case 7:
			nw.isolate(pick())
		case 8:
			nw.heal()
		case 9:
			if a, b := pick(), pick(); a.up && a != b {
				nw.input(a, func(c *Core, now time.Time) { c.PeerDown(now, b.pid, gen.ErrNoConnection) })
			}
		case 10:
			sn := pick()
			cfg := sn.core.cfg
			src := rand.NewPCG(seed, uint64(i))
			srcs[sn.name] = src
			cfg.Rand = rand.New(src)
			nw.add(cfg, sn.hs)
		case 11:
			a, b := pick(), pick()
			if a.up && a != b {
				nw.input(a, func(c *Core, now time.Time) {
					if r.IntN(2) == 0 {
						_ = c.Leave(now, b.name)
					} else {
						_ = c.Join(now, procID(b.name))
					}
				})
			}
		}
		if observe != nil {
			observe()
		}
		for _, name := range nw.names {
			sn := nw.nodes[name]
			trace = append(trace, fmt.Sprintf("%d %s up=%t key=%x status=%s effects=%s sent=%s",
				i, name, sn.up, sn.core.AppendStateKey(nil, nw.now), describe(t, sn.core.Status(nw.now)),
				describe(t, sn.effects), describe(t, sn.sent)))
			sn.effects, sn.sent = nil, nil
		}
	}
	return trace
}

// replayNetwork is a network of four whose members draw from sources
// recorded in srcs, for twin to copy.
func replayNetwork(t *testing.T, seed uint64) (*network, map[gen.Atom]*rand.PCG) {
	srcs := map[gen.Atom]*rand.PCG{}
	nw := newNetwork(t, 4, seed, func(c *Config) {
		src := rand.NewPCG(seed, uint64(len(srcs)))
		srcs[c.Self.Node] = src
		c.Rand = rand.New(src)
		c.DisablePreVote = seed%2 == 0
		c.MinClusterSize = 2
	})
	nw.allowFatal = true
	return nw, srcs
}

// A clone taken mid-run, driven later through the same inputs as the
// original, does exactly what the original did: the original's run changed
// nothing the clone holds, and the clone lacks nothing the original had.
func TestCloneReplaysWhatTheOriginalDid(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			nw, srcs := replayNetwork(t, seed)
			churn(t, nw, srcs, seed, 150, nil)
			copyNet, copySrcs := twin(nw, srcs)
			want := churn(t, nw, srcs, seed+1000, 150, nil)
			got := churn(t, copyNet, copySrcs, seed+1000, 150, nil)
			for i := range want {
				require.Equal(t, want[i], got[i], "step %d", i/len(nw.names))
			}
		})
	}
}

// changeView has leader l of nw change the view as op says (0: a new
// leader re-stamps it, 1: a member leaves, 2: one joins, 3: leadership
// moves), waits, and returns the leader then.
func (nw *network) changeView(l *simNode, r *rand.Rand, op int, wait time.Duration) *simNode {
	switch op {
	case 0:
		nw.isolate(l)
		nw.run(wait)
		nw.heal()
	case 1:
		if m := l.core.view.Members; len(m) > 3 {
			nw.input(l, func(c *Core, now time.Time) { _ = c.Leave(now, m[r.IntN(len(m))].Node) })
		}
	case 2:
		for _, name := range nw.names {
			if !l.core.view.has(name) {
				nw.input(l, func(c *Core, now time.Time) { _ = c.Join(now, procID(name)) })
				break
			}
		}
	case 3:
		nw.makeLeader(1 + r.IntN(len(nw.names)))
	}
	nw.run(wait)
	return nw.settle(10 * time.Second)
}

// publishedViews keeps every view a core handed out, with what it held when
// first seen.
type publishedViews struct {
	views   map[*View]string
	members map[*gen.ProcessID]string // by the list's first element: View() values share it
}

func (p *publishedViews) note(t *testing.T, v *View) {
	if v == nil {
		return
	}
	if _, ok := p.views[v]; !ok {
		p.views[v] = describe(t, v)
	}
	p.noteMembers(t, v.Members)
}

func (p *publishedViews) noteMembers(t *testing.T, list []gen.ProcessID) {
	if len(list) == 0 {
		return
	}
	if _, ok := p.members[&list[0]]; !ok {
		p.members[&list[0]] = describe(t, list)
	}
}

// changed lists the views and member lists that no longer hold what they
// held when first seen.
func (p *publishedViews) changed(t *testing.T) []string {
	var out []string
	for v, was := range p.views {
		if now := describe(t, v); now != was {
			out = append(out, was+" became "+now)
		}
	}
	for first, was := range p.members {
		var list []gen.ProcessID
		require.NoError(t, json.Unmarshal([]byte(was), &list))
		if now := describe(t, unsafe.Slice(first, len(list))); now != was {
			out = append(out, "members "+was+" became "+now)
		}
	}
	return out
}

// Views are shared, not copied, between a core, its Ready, its messages,
// the cores that receive them and clones: that is safe only while no core
// changes a view once made. Every view a member publishes (in a HardState,
// a ViewChanged, a message, or View's members), and every declared set it
// sends, keeps what it held when published, while every member goes on
// forming, re-stamping, agreeing on, growing and shrinking its view.
func TestPublishedViewsNeverChange(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			nw := newNetwork(t, 5, seed, nil)
			seen := &publishedViews{views: map[*View]string{}, members: map[*gen.ProcessID]string{}}
			declared := 0
			nw.onReady = func(sn *simNode, rd Ready) {
				if rd.HardState != nil {
					seen.note(t, rd.HardState.View)
				}
				for _, e := range rd.Effects {
					if e.Kind == EffectViewChanged {
						seen.note(t, e.FromView)
						seen.note(t, e.ToView)
					}
				}
				for _, out := range rd.Messages {
					switch m := out.Message.(type) {
					case MessageHeartbeat:
						seen.note(t, m.View)
					case MessageVote:
						seen.note(t, m.View)
						seen.noteMembers(t, m.Declared)
						declared += len(m.Declared)
					case MessageRequestVote:
						seen.noteMembers(t, m.Declared)
						declared += len(m.Declared)
					}
				}
				if v, ok := sn.core.View(); ok {
					seen.noteMembers(t, v.Members)
				}
			}
			r := rand.New(rand.NewPCG(seed, 5))
			l := nw.settle(5 * time.Second)
			wait := 3 * l.core.cfg.ElectionTimeoutMax
			for range 12 {
				l = nw.changeView(l, r, r.IntN(4), wait)
				require.Empty(t, seen.changed(t))
			}
			require.Greater(t, len(seen.views), 10, "too few views were published to test anything")
			require.NotZero(t, declared, "no declared set was sent")
		})
	}
}

// A member without a view sends its declared set with every request: one
// list, shared by every message, while the set stands. A set that grows
// (a peer made contact) or shrinks (Leave withdrew one) is a new list, and
// every list sent keeps what it held.
func TestDeclaredSetsSentNeverChange(t *testing.T) {
	h := newHarness(t, 2, func(c *Config) { c.MinClusterSize = 3 })
	type sent struct {
		list []gen.ProcessID
		was  []gen.ProcessID
	}
	var all []sent
	round := func() [][]gen.ProcessID {
		var lists [][]gen.ProcessID
		for _, out := range h.take().Messages {
			if m, ok := out.Message.(MessageRequestVote); ok && m.Declared != nil {
				lists = append(lists, m.Declared)
				all = append(all, sent{m.Declared, slices.Clone(m.Declared)})
			}
		}
		require.NotEmpty(t, lists, "no request carried the declared set")
		for _, l := range lists[1:] {
			assert.Same(t, &lists[0][0], &l[0], "one list for every peer asked while the set stands")
		}
		return lists
	}
	nodes := func(l []gen.ProcessID) []gen.Atom {
		var out []gen.Atom
		for _, m := range l {
			out = append(out, m.Node)
		}
		return out
	}

	h.campaign()
	three := round()[0]
	assert.Equal(t, []gen.Atom{nodeName(1), nodeName(2), nodeName(3)}, nodes(three))

	h.step(4, MessageRequestVote{Header: hdr(4, h.c.Term(), ViewStamp{}), PreVote: true, Declared: []gen.ProcessID{procID(nodeName(4))}})
	h.take()
	h.campaign()
	four := round()[0]
	assert.Equal(t, []gen.Atom{nodeName(1), nodeName(2), nodeName(3), nodeName(4)}, nodes(four), "n4 made contact")

	require.NoError(t, h.c.Leave(h.now, nodeName(3)))
	h.take()
	h.campaign()
	assert.Equal(t, []gen.Atom{nodeName(1), nodeName(2), nodeName(4)}, nodes(round()[0]), "n3 was withdrawn")

	for _, s := range all {
		assert.Equal(t, s.was, s.list, "a declared set sent changed")
	}
}
