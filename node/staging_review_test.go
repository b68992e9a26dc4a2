package node_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// Review stress: one sender's messages to three remote processes, two by
// PID and one by registered name, in runs of random length (so the
// reader's staging switches process often and fills its batches), with
// Calls in between: each process gets every message once, in order, and
// each Call after the messages sent before it.
func TestReviewRemoteStagingKeepsEachPairsOrder(t *testing.T) {
	a, b := pair(t)
	const targets, total = 3, 20000
	var mu sync.Mutex
	got := make([][]int, targets)
	calls := make([]int, targets) // messages seen when each Call arrived, checked in onCall
	var bad []string
	spawn := func(i int, name gen.Atom) gen.PID {
		c := newProbe()
		c.onMessage = func(p *probe, from gen.PID, message any) error {
			mu.Lock()
			got[i] = append(got[i], message.(ping).Seq)
			mu.Unlock()
			return nil
		}
		c.onCall = func(p *probe, from gen.PID, ref gen.Ref, request any) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			want := request.(ping).Seq
			if len(got[i]) != want {
				bad = append(bad, "call overtook messages")
			}
			calls[i]++
			return request, nil
		}
		var pid gen.PID
		var err error
		if name != "" {
			pid, err = b.SpawnRegister(name, c.factory(), gen.ProcessOptions{})
		} else {
			pid, err = b.Spawn(c.factory(), gen.ProcessOptions{})
		}
		require.NoError(t, err)
		return pid
	}
	to := []any{spawn(0, ""), spawn(1, ""), gen.ProcessID{Name: "named", Node: b.Name()}}
	spawn(2, "named")
	sent := make([]int, targets)
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < total; {
		i := rng.IntN(targets)
		run := 1 + rng.IntN(100)
		for k := 0; k < run && n < total; k, n = k+1, n+1 {
			require.NoError(t, a.Send(to[i], ping{Seq: sent[i]}))
			sent[i]++
		}
		if rng.IntN(20) == 0 {
			_, err := a.Call(to[i], ping{Seq: sent[i]})
			require.NoError(t, err)
		}
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range got {
			if len(got[i]) < sent[i] {
				return false
			}
		}
		return true
	}, 20*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad)
	for i := range got {
		require.Len(t, got[i], sent[i])
		for k, seq := range got[i] {
			require.Equal(t, k, seq, "target %d: message %d out of order", i, k)
		}
	}
}
