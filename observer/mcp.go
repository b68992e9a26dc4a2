package observer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/leader"
)

// MCPServerName and MCPServerVersion identify the observer's MCP server to clients.
const (
	MCPServerName    = "regent-observer"
	MCPServerVersion = "v0.1.0"
)

// Resource URIs the MCP server serves. A cluster ID is percent-encoded as RFC
// 6570 simple expansion does; a node name may be written as is (name@host:port)
// or percent-encoded.
const (
	ResourceClusters        = "regent://clusters"
	ResourceClusterTemplate = "regent://clusters/{cluster}"
	ResourceMemberTemplate  = "regent://clusters/{cluster}/members/{+node}"
)

// LeadersInput selects the clusters the leaders tool answers for.
type LeadersInput struct {
	Cluster string `json:"cluster,omitempty" jsonschema:"a cluster ID; empty means every cluster of the node"`
}

// LeadersOutput is the leaders tool's answer: what every member of each
// cluster believes.
type LeadersOutput struct {
	Node     string           `json:"node"`
	Clusters []ClusterBeliefs `json:"clusters"`
}

// ClusterBeliefs is one cluster's members and what each believes.
type ClusterBeliefs struct {
	Cluster string `json:"cluster"`
	// Leader is the leader every answering member agrees on, empty if none.
	Leader   string         `json:"leader"`
	Term     uint64         `json:"term"`
	Problems []Problem      `json:"problems"`
	Members  []MemberBelief `json:"members"`
	Error    string         `json:"error,omitempty"`
}

// MemberBelief is what one member believes: its role, the leader it
// recognises, its term, view and quorum.
type MemberBelief struct {
	Node     string `json:"node"`
	State    string `json:"state"`
	Leader   string `json:"leader"`
	Term     uint64 `json:"term"`
	ViewSize int    `json:"view_size"`
	Quorum   int    `json:"quorum"`
	Error    string `json:"error,omitempty"`
}

// MemberInput names one member of one cluster.
type MemberInput struct {
	Cluster string `json:"cluster,omitempty" jsonschema:"the cluster ID; may be empty when the node is in one cluster only"`
	Node    string `json:"node" jsonschema:"the member's node name, name@host or name@host:port"`
}

// ClustersOutput is the clusters tool's answer.
type ClustersOutput struct {
	Node     string           `json:"node"`
	Clusters []ClusterSummary `json:"clusters"`
}

// ClusterSummary is one line per cluster of the node.
type ClusterSummary struct {
	Cluster  string   `json:"cluster"`
	Via      string   `json:"via"`
	Leader   string   `json:"leader"`
	Term     uint64   `json:"term"`
	Members  []string `json:"members"`
	Problems []string `json:"problems"`
	Error    string   `json:"error,omitempty"`
}

// mcpTools answers the MCP server's tools and resources for one node. A
// question about one cluster or member reads that cluster alone; one about
// every cluster takes latest (a Handler's sampler) when set, and otherwise
// reads the node as the sampler does, spread over time (pauseAfter), so a
// client calling in a loop cannot read a large node in bursts.
type mcpTools struct {
	node   gen.Node
	latest func(context.Context) (Report, error)
}

// report reads every cluster of the node (see mcpTools).
func (t mcpTools) report(ctx context.Context) (Report, error) {
	if t.latest != nil {
		return t.latest(ctx)
	}
	return paced(ctx, DefaultSampleInterval, "the clusters of "+string(t.node.Name()),
		func(pause func(time.Duration) bool) (Report, error) { return collect(t.node, pause) })
}

// cluster reads one cluster of the node alone.
func (t mcpTools) cluster(id string) (ClusterReport, error) {
	c, ok := CollectCluster(t.node, id)
	if !ok {
		return ClusterReport{}, t.noCluster(id)
	}
	return c, nil
}

// NewMCPServer returns an MCP server answering questions about node's
// clusters: the tools "leaders" (which node each member believes leads, at
// which term, with which view and quorum), "member" (one member's full
// inspection) and "clusters" (the clusters on the node), and the resources
// regent://clusters, regent://clusters/{cluster} and
// regent://clusters/{cluster}/members/{node}, all JSON. A question about
// one cluster or member reads that cluster alone; one about every cluster
// reads the node spread over time, as the Handler's sampler does.
func NewMCPServer(node gen.Node) *mcp.Server {
	return newMCPServer(mcpTools{node: node})
}

func newMCPServer(t mcpTools) *mcp.Server {
	node := t.node
	s := mcp.NewServer(&mcp.Implementation{Name: MCPServerName, Version: MCPServerVersion}, &mcp.ServerOptions{
		Instructions: "Regent leader election, observed from node " + string(node.Name()) +
			". Call clusters first, then leaders for who leads at which term, member for one member's full ergo:* inspection.",
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "leaders",
		Description: "For each cluster of the node (or one), which node every member believes leads, at which term, with which view size and quorum, plus any disagreement.",
	}, t.leaders)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "member",
		Description: "One member's full election inspection (every ergo:* key, parsed and raw).",
	}, t.member)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "clusters",
		Description: "The clusters the node takes part in, each with its agreed leader, term, members and problems.",
	}, t.clusters)
	s.AddResource(&mcp.Resource{
		URI: ResourceClusters, Name: "clusters", MIMEType: "application/json",
		Description: "Every cluster of the node with every member's parsed inspection.",
	}, t.readClusters)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: ResourceClusterTemplate, Name: "cluster", MIMEType: "application/json",
		Description: "One cluster with every member's parsed inspection.",
	}, t.readCluster)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: ResourceMemberTemplate, Name: "member", MIMEType: "application/json",
		Description: "One member's parsed and raw inspection.",
	}, t.readMember)
	return s
}

// ServeMCPStdio runs NewMCPServer(node) over standard input and output until
// ctx ends or the client disconnects.
func ServeMCPStdio(ctx context.Context, node gen.Node) error {
	if err := NewMCPServer(node).Run(ctx, &mcp.StdioTransport{}); err != nil {
		return fmt.Errorf("observer: MCP over stdio: %w", err)
	}
	return nil
}

// NewMCPHandler serves NewMCPServer(node) over MCP's streamable HTTP
// transport, statelessly: every request stands alone, so no session outlives
// its request.
func NewMCPHandler(node gen.Node) http.Handler { return newMCPHandler(mcpTools{node: node}, false) }

// newMCPHandler is NewMCPHandler for t; hostChecked leaves the Host check to
// a Handler in front, whose WithHosts may accept a reverse proxy's name.
func newMCPHandler(t mcpTools, hostChecked bool) http.Handler {
	s := newMCPServer(t)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: hostChecked})
}

func (t mcpTools) leaders(ctx context.Context, _ *mcp.CallToolRequest, in LeadersInput) (*mcp.CallToolResult, LeadersOutput, error) {
	var clusters []ClusterReport
	if in.Cluster != "" {
		c, err := t.cluster(in.Cluster)
		if err != nil {
			return nil, LeadersOutput{}, err
		}
		clusters = []ClusterReport{c}
	} else {
		report, err := t.report(ctx)
		if err != nil {
			return nil, LeadersOutput{}, err
		}
		clusters = report.Clusters
	}
	out := LeadersOutput{Node: string(t.node.Name()), Clusters: make([]ClusterBeliefs, 0, len(clusters))}
	for _, c := range clusters {
		b := ClusterBeliefs{Cluster: c.ID, Leader: c.Leader, Term: c.Term, Problems: c.Problems, Error: c.Error, Members: make([]MemberBelief, 0, len(c.Members))}
		for _, m := range c.Members {
			b.Members = append(b.Members, MemberBelief{Node: m.Node, State: m.State, Leader: m.LeaderNode, Term: m.Term, ViewSize: m.ViewSize, Quorum: m.Quorum, Error: m.Error})
		}
		out.Clusters = append(out.Clusters, b)
	}
	return nil, out, nil
}

func (t mcpTools) member(_ context.Context, _ *mcp.CallToolRequest, in MemberInput) (*mcp.CallToolResult, MemberReport, error) {
	m, err := t.findMember(in.Cluster, in.Node)
	return nil, m, err
}

func (t mcpTools) clusters(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ClustersOutput, error) {
	report, err := t.report(ctx)
	if err != nil {
		return nil, ClustersOutput{}, err
	}
	out := ClustersOutput{Node: report.Node, Clusters: make([]ClusterSummary, 0, len(report.Clusters))}
	for _, c := range report.Clusters {
		s := ClusterSummary{Cluster: c.ID, Via: c.Via, Leader: c.Leader, Term: c.Term, Members: nodesOf(c.Members), Problems: []string{}, Error: c.Error}
		for _, p := range c.Problems {
			s.Problems = append(s.Problems, p.Message)
		}
		out.Clusters = append(out.Clusters, s)
	}
	return nil, out, nil
}

// findMember reads one member, its cluster alone; cluster may be empty when
// the node is in one cluster.
func (t mcpTools) findMember(cluster, node string) (MemberReport, error) {
	var c ClusterReport
	if cluster == "" {
		pids, err := leader.Find(t.node)
		if err != nil {
			return MemberReport{}, fmt.Errorf("observer: finding leader actors on %s: %w", t.node.Name(), err)
		}
		if len(pids) != 1 {
			return MemberReport{}, fmt.Errorf("observer: node %s is in %d clusters; name one: %w", t.node.Name(), len(pids), gen.ErrIncorrect)
		}
		if c = readCluster(t.node, pids[0]); c.ID == "" {
			return MemberReport{}, fmt.Errorf("observer: the leader actor %s on %s ended: %w", pids[0], t.node.Name(), gen.ErrProcessUnknown)
		}
		cluster = c.ID
	} else {
		var err error
		if c, err = t.cluster(cluster); err != nil {
			return MemberReport{}, err
		}
	}
	for _, m := range c.Members {
		if m.Node == node {
			return m, nil
		}
	}
	return MemberReport{}, fmt.Errorf("observer: cluster %q has no member on node %q (members: %s): %w", cluster, node, strings.Join(nodesOf(c.Members), ", "), gen.ErrNameUnknown)
}

func (t mcpTools) noCluster(cluster string) error {
	return fmt.Errorf("observer: node %s runs no leader actor of cluster %q: %w", t.node.Name(), cluster, gen.ErrNameUnknown)
}

func (t mcpTools) readClusters(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	report, err := t.report(ctx)
	if err != nil {
		return nil, err
	}
	return jsonResource(req.Params.URI, report)
}

func (t mcpTools) readCluster(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	parts, err := resourcePath(req.Params.URI)
	if err != nil || len(parts) != 1 {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	c, ok := CollectCluster(t.node, parts[0])
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return jsonResource(req.Params.URI, c)
}

func (t mcpTools) readMember(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	parts, err := resourcePath(req.Params.URI)
	if err != nil || len(parts) != 3 || parts[1] != "members" {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	m, err := t.findMember(parts[0], parts[2])
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", mcp.ResourceNotFoundError(req.Params.URI), err)
	}
	return jsonResource(req.Params.URI, m)
}

// resourcePath splits the part of a regent://clusters/... URI after
// "clusters/" into unescaped segments.
func resourcePath(uri string) ([]string, error) {
	rest, ok := strings.CutPrefix(uri, ResourceClusters+"/")
	if !ok {
		return nil, fmt.Errorf("observer: %q is not under %s: %w", uri, ResourceClusters, gen.ErrIncorrect)
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		s, err := url.PathUnescape(p)
		if err != nil {
			return nil, fmt.Errorf("observer: resource URI %q: %w", uri, err)
		}
		parts[i] = s
	}
	return parts, nil
}

func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("observer: encoding %s: %w", uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}
