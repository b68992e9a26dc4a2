package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// Review: messages sent while the first connection to a peer is being
// made wait in the dial queue, and those sent once it is made go on the
// connection; a sender whose send catches the connection published but
// the dial queue not yet handed over to it must not overtake its own
// earlier messages. Each round makes a fresh connection and sends through
// its set-up.
func TestReviewMessagesSentWhileTheConnectionIsMadeKeepTheirOrder(t *testing.T) {
	const rounds, burst = 100, 400
	for r := range rounds {
		a, _ := startNet(t, gen.Atom(fmt.Sprintf("da%d@127.0.0.1", r)), fastNet(testCookie))
		b, _ := startNet(t, gen.Atom(fmt.Sprintf("db%d@127.0.0.1", r)), fastNet(testCookie))
		route(t, a, b)
		c := newProbe()
		got := make(chan int, burst)
		c.onMessage = func(p *probe, from gen.PID, message any) error {
			got <- message.(ping).Seq
			return nil
		}
		pid := spawnProbe(t, b, c)
		for i := range burst {
			require.NoError(t, a.Send(pid, ping{Seq: i}))
		}
		for i := range burst {
			select {
			case seq := <-got:
				require.Equal(t, i, seq, "round %d: message %d out of order", r, i)
			case <-time.After(wait):
				require.FailNow(t, "lost", "round %d: message %d never arrived", r, i)
			}
		}
		a.Stop()
		b.Stop()
	}
}
