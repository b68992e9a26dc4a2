package observer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/observer"
)

// connectInMemory connects an SDK client to NewMCPServer(node) through the
// SDK's in-memory transport; both ends close when the test ends.
func connectInMemory(t *testing.T, c *testCluster, i int) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := observer.NewMCPServer(c.nodes[i]).Connect(ctx, serverEnd, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "observer-test", Version: "v0"}, nil).Connect(ctx, clientEnd, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, cs.Close())
		require.NoError(t, ss.Wait())
	})
	return cs
}

// callToolE calls a tool that must succeed and decodes its structured
// output. It does not touch a test, so conditions polled by
// require.Eventually can use it.
func callToolE(cs *mcp.ClientSession, name string, args any, out any) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tool %s failed: %s", name, toolText(res))
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// callTool is callToolE that fails the test.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) {
	t.Helper()
	require.NoError(t, callToolE(cs, name, args, out))
}

func toolText(res *mcp.CallToolResult) string {
	var out string
	for _, c := range res.Content {
		if text, ok := c.(*mcp.TextContent); ok {
			out += text.Text
		}
	}
	return out
}

// readResource reads a JSON resource and decodes it.
func readResource(t *testing.T, cs *mcp.ClientSession, uri string, out any) {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	assert.Equal(t, "application/json", res.Contents[0].MIMEType)
	require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), out))
}

func TestMCPServer(t *testing.T) {
	c := startCluster(t, "mcp", 3)
	want := c.healthy(t, 1)
	cs := connectInMemory(t, c, 1)
	ctx := context.Background()

	t.Run("it offers the leaders, member and clusters tools", func(t *testing.T) {
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			require.NoError(t, err)
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		assert.Equal(t, []string{"clusters", "leaders", "member"}, names)
	})

	t.Run("one call says which node each member thinks leads, at which term, view and quorum", func(t *testing.T) {
		// Poll until an answer shows the cluster at rest: a loaded machine may
		// hold an election between two calls.
		var out observer.LeadersOutput
		require.Eventually(t, func() bool {
			err := callToolE(cs, "leaders", map[string]any{}, &out)
			return err == nil && len(out.Clusters) == 1 && out.Clusters[0].Leader != "" && len(out.Clusters[0].Problems) == 0
		}, settle, poll, "the leaders tool never showed the cluster at rest: %+v", out)
		assert.Equal(t, string(c.nodes[1].Name()), out.Node)
		got := out.Clusters[0]
		assert.Equal(t, "mcp", got.Cluster)
		assert.GreaterOrEqual(t, got.Term, want.Term, "terms never go back")
		require.Len(t, got.Members, 3)
		leaders := 0
		for _, m := range got.Members {
			assert.Equal(t, got.Leader, m.Leader, m.Node)
			assert.Equal(t, got.Term, m.Term, m.Node)
			assert.Equal(t, 3, m.ViewSize, m.Node)
			assert.Equal(t, 2, m.Quorum, m.Node)
			if m.State == observer.RoleLeader {
				leaders++
			}
		}
		assert.Equal(t, 1, leaders)
	})

	t.Run("the leaders tool narrows to one cluster and refuses an unknown one", func(t *testing.T) {
		var out observer.LeadersOutput
		callTool(t, cs, "leaders", map[string]any{"cluster": "mcp"}, &out)
		assert.Len(t, out.Clusters, 1)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "leaders", Arguments: map[string]any{"cluster": "nope"}})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Contains(t, toolText(res), `"nope"`)
	})

	t.Run("the member tool returns a remote member's full inspection", func(t *testing.T) {
		remote := string(c.nodes[2].Name())
		var m observer.MemberReport
		callTool(t, cs, "member", map[string]any{"node": remote}, &m)
		assert.Equal(t, remote, m.Node)
		assert.False(t, m.Self)
		for _, key := range leader.InspectKeys() {
			assert.Contains(t, m.Inspection, key)
		}
		assert.Equal(t, "observer test member", m.Inspection["user:role"])
	})

	t.Run("the member tool names the members when asked for a stranger", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "member", Arguments: map[string]any{"cluster": "mcp", "node": "nobody@127.0.0.1"}})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Contains(t, toolText(res), string(c.nodes[0].Name()))
	})

	t.Run("the clusters tool lists the node's clusters", func(t *testing.T) {
		var out observer.ClustersOutput
		require.Eventually(t, func() bool {
			err := callToolE(cs, "clusters", map[string]any{}, &out)
			return err == nil && len(out.Clusters) == 1 && out.Clusters[0].Leader != "" && len(out.Clusters[0].Problems) == 0
		}, settle, poll, "the clusters tool never showed the cluster at rest: %+v", out)
		assert.Equal(t, "mcp", out.Clusters[0].Cluster)
		assert.Equal(t, c.pids[1].String(), out.Clusters[0].Via)
		assert.Len(t, out.Clusters[0].Members, 3)
	})

	t.Run("resources serve the report, one cluster and one member", func(t *testing.T) {
		var report observer.Report
		readResource(t, cs, observer.ResourceClusters, &report)
		assert.Len(t, report.Clusters, 1)

		var cluster observer.ClusterReport
		readResource(t, cs, "regent://clusters/mcp", &cluster)
		assert.Equal(t, "mcp", cluster.ID)
		assert.Len(t, cluster.Members, 3)

		var m observer.MemberReport
		node := string(c.nodes[0].Name())
		readResource(t, cs, "regent://clusters/mcp/members/"+node, &m)
		assert.Equal(t, node, m.Node)
		assert.NotEmpty(t, m.State)
		var escaped observer.MemberReport
		readResource(t, cs, "regent://clusters/mcp/members/"+url.QueryEscape(node), &escaped)
		assert.Equal(t, node, escaped.Node, "a percent-encoded node name works too")

		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "regent://clusters/nope"})
		assert.Error(t, err)
	})
}

func TestMCPOverStreamableHTTP(t *testing.T) {
	c := startCluster(t, "mcphttp", 3)
	c.healthy(t, 0)
	s := serve(t, c.nodes[0])
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "observer-test", Version: "v0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL() + "mcp"}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cs.Close()) }()

	var out observer.ClustersOutput
	require.Eventually(t, func() bool {
		err := callToolE(cs, "clusters", map[string]any{}, &out)
		return err == nil && len(out.Clusters) == 1 && out.Clusters[0].Leader != ""
	}, settle, poll, "the clusters tool over HTTP never named a leader: %+v", out)
	assert.Equal(t, "mcphttp", out.Clusters[0].Cluster)
	assert.Len(t, out.Clusters[0].Members, 3)
}

// stdioChildEnv makes the test binary, run as a child, serve MCP over its
// standard input and output instead of running tests.
const stdioChildEnv = "REGENT_OBSERVER_STDIO_CHILD"

func TestMCPOverStdio(t *testing.T) {
	if os.Getenv(stdioChildEnv) != "" {
		serveStdioChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMCPOverStdio$", "-test.count=1")
	cmd.Env = append(os.Environ(), stdioChildEnv+"=1")
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "observer-test", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)

	var out observer.ClustersOutput
	callTool(t, cs, "clusters", map[string]any{}, &out)
	assert.Equal(t, "stdio@127.0.0.1", out.Node, "the tool answers from the child's node")
	assert.Empty(t, out.Clusters)
	require.NoError(t, cs.Close(), "closing stdin ends ServeMCPStdio and the child")
}

// serveStdioChild is the child side of TestMCPOverStdio: a node with no
// leader actor, observed over stdio until the parent closes stdin.
func serveStdioChild(t *testing.T) {
	n := startLocalNode(t, "stdio@127.0.0.1")
	require.NoError(t, observer.ServeMCPStdio(context.Background(), n))
}

// A question about one cluster or one member reads that cluster alone: on
// a node of many clusters, asking about one wakes none of the others. A
// question about every cluster reads them all.
func TestMCPAsksAboutOneClusterWithoutReadingTheOthers(t *testing.T) {
	c := startCluster(t, "asked", 3)
	c.healthy(t, 1)
	var inspections atomic.Int64
	other := &testCluster{id: "bystander", nodes: c.nodes}
	other.pids = spawnMembersWith(t, c.nodes, "bystander", "bystander", func(int) gen.ProcessBehavior {
		return &countingMember{inspections: &inspections}
	})
	other.healthy(t, 1)
	cs := connectInMemory(t, c, 1)
	before := inspections.Load()

	var leaders observer.LeadersOutput
	callTool(t, cs, "leaders", map[string]any{"cluster": "asked"}, &leaders)
	require.Len(t, leaders.Clusters, 1)
	assert.Equal(t, "asked", leaders.Clusters[0].Cluster)
	var member observer.MemberReport
	callTool(t, cs, "member", map[string]any{"cluster": "asked", "node": string(c.nodes[2].Name())}, &member)
	assert.Equal(t, "asked", member.Cluster)
	var cluster observer.ClusterReport
	readResource(t, cs, "regent://clusters/asked", &cluster)
	assert.Equal(t, "asked", cluster.ID)
	assert.Equal(t, before, inspections.Load(), "no member of the other cluster was inspected")

	var all observer.ClustersOutput
	callTool(t, cs, "clusters", map[string]any{}, &all)
	assert.Len(t, all.Clusters, 2)
	assert.Greater(t, inspections.Load(), before, "a question about every cluster reads the other too")
}
