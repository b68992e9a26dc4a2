package observer_test

import (
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/observer"
)

// The observer has no authentication; what reaches it must not reach the
// node's peers. A flood of idle connections, more than the process has file
// descriptors to spare, must leave the node able to redial its peers.
func TestIdleConnectionsToTheObserverCannotStarveThePeers(t *testing.T) {
	c := startCluster(t, "fd", 3)
	c.healthy(t, 0)
	const capacity, attackers, spare = 16, 150, 60
	s := serve(t, c.nodes[0], observer.WithMaxConnections(capacity))

	// The limit leaves room for the attackers' own sockets (they live in
	// this process), the capped server's and a few dozen for the nodes:
	// without the cap the server would need another attackers-capacity.
	var saved syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved))
	limit := uint64(openFiles(t) + attackers + capacity + spare)
	require.Less(t, limit, saved.Cur, "the test needs a soft limit above %d", limit)
	lowered := saved
	lowered.Cur = limit
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered))
	t.Cleanup(func() { require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved)) })

	var conns []net.Conn
	t.Cleanup(func() {
		for _, conn := range conns {
			_ = conn.Close() // the server may have closed it already
		}
	})
	for range attackers {
		conn, err := net.Dial("tcp", s.Addr())
		require.NoError(t, err, "an attacker connects (the kernel's backlog takes what the server does not accept)")
		conns = append(conns, conn)
	}

	t.Run("the node redials its peers while the connections stand", func(t *testing.T) {
		for _, peer := range c.nodes[1:] {
			require.NoError(t, c.nodes[0].Network().Disconnect(peer.Name()))
		}
		c.healthy(t, 0) // reads every member through fresh connections
	})
	t.Run("the observer serves again once they are gone", func(t *testing.T) {
		for _, conn := range conns {
			require.NoError(t, conn.Close())
		}
		conns = nil
		var report observer.Report
		require.Eventually(t, func() bool { return fetchJSON(s.URL()+"api/clusters", http.StatusOK, &report) == nil }, settle, poll)
	})
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// A page elsewhere must not read the observer through DNS rebinding: on a
// loopback address, a foreign Host header is refused on every route.
func TestForeignHostHeadersAreRefused(t *testing.T) {
	c := startCluster(t, "hosts", 3)
	s := serve(t, c.nodes[0])
	get := func(path, host string) int {
		req, err := http.NewRequest(http.MethodGet, s.URL()+path, nil)
		require.NoError(t, err)
		req.Host = host
		client := &http.Client{Timeout: settle}
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	for _, path := range []string{"api/clusters", "api/actors", "api/timeline", "", "metrics"} {
		t.Run("/"+path+" refuses a foreign host and serves a loopback one", func(t *testing.T) {
			assert.Equal(t, http.StatusForbidden, get(path, "attacker.example:80"))
			_, port, err := net.SplitHostPort(s.Addr())
			require.NoError(t, err)
			for _, host := range []string{s.Addr(), "localhost:" + port, "[::1]:" + port} {
				assert.Equal(t, http.StatusOK, get(path, host), "Host %s", host)
			}
		})
	}
	t.Run("a host named for a local reverse proxy is served, and only that one", func(t *testing.T) {
		proxied := serve(t, c.nodes[0], observer.WithHosts("regent.example.com"))
		get := func(host string) int {
			req, err := http.NewRequest(http.MethodGet, proxied.URL()+"api/clusters", nil)
			require.NoError(t, err)
			req.Host = host
			resp, err := (&http.Client{Timeout: settle}).Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			return resp.StatusCode
		}
		assert.Equal(t, http.StatusOK, get("Regent.Example.com:443"))
		assert.Equal(t, http.StatusForbidden, get("attacker.example"))
	})
}
