package node

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

func TestProcTable(t *testing.T) {
	proc := func(id uint64) *process { return &process{pid: gen.PID{Node: "n@h", ID: id}} }

	t.Run("finds every stored process by ID, and none removed or never stored", func(t *testing.T) {
		var tab procTable
		require.Nil(t, tab.load(firstPID+1), "an empty table")
		procs := map[uint64]*process{}
		for id := uint64(firstPID + 1); id <= firstPID+3*procPageSize; id += 7 {
			procs[id] = proc(id)
			tab.store(procs[id])
		}
		for id := uint64(0); id <= firstPID+4*procPageSize; id++ {
			require.Same(t, procs[id], tab.load(id), "id %d", id)
		}
		for id, p := range procs {
			if id%2 == 0 {
				tab.remove(p, firstPID+3*procPageSize)
				delete(procs, id)
			}
		}
		for id := uint64(firstPID + 1); id <= firstPID+3*procPageSize; id++ {
			require.Same(t, procs[id], tab.load(id), "id %d", id)
		}
	})

	t.Run("drops a page once all its IDs are handed out and its processes gone, and makes it again for a late spawn", func(t *testing.T) {
		var tab procTable
		first, last := proc(firstPID+1), proc(firstPID+procPageSize)
		tab.store(first)
		tab.store(last)
		tab.remove(first, firstPID+procPageSize)
		require.NotNil(t, (*tab.dir.Load())[0], "a process of the page lives on")
		next := proc(firstPID + procPageSize + 1)
		tab.store(next)
		tab.remove(next, firstPID+procPageSize+1)
		require.NotNil(t, (*tab.dir.Load())[1], "IDs of the page are still to be handed out")
		tab.remove(last, firstPID+procPageSize+1)
		require.Nil(t, (*tab.dir.Load())[0], "complete and empty")

		late := proc(firstPID + 2) // its ID was handed out before the page emptied
		tab.store(late)
		require.Same(t, late, tab.load(late.pid.ID))
	})

	t.Run("readers see stored processes while writers store and remove others, dropping and making pages", func(t *testing.T) {
		var tab procTable
		var mu sync.Mutex // the writers' lock, as n.mu
		stay := proc(firstPID + 1)
		tab.store(stay)
		const span = 4 * procPageSize
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 20 * span {
				p := proc(firstPID + procPageSize + 1 + uint64(i%span))
				mu.Lock()
				tab.store(p)                              // makes the page again after...
				tab.remove(p, firstPID+procPageSize+span) // ...this drops it: every ID is handed out
				mu.Unlock()
			}
		}()
		for i := 0; ; i++ {
			select {
			case <-done:
				require.Same(t, stay, tab.load(stay.pid.ID))
				return
			default:
				require.Same(t, stay, tab.load(stay.pid.ID))
				tab.load(firstPID + procPageSize + 1 + uint64(i%span))
			}
		}
	})
}
