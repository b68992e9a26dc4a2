package observer

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/regent-go/regent/gen"
)

// DefaultSampleInterval is how often the sampler reads the node's clusters
// unless WithSampleInterval says otherwise.
const DefaultSampleInterval = 250 * time.Millisecond

//go:embed web
var webFiles embed.FS

// DefaultMaxConnections caps the connections Serve holds open at once.
const DefaultMaxConnections = 64

// config holds the resolved options of a Handler and of Serve.
type config struct {
	sampleInterval time.Duration
	maxConnections int
	hosts          map[string]bool // extra Host names accepted on a loopback connection
}

// resolve applies opts over the defaults.
func resolve(opts []Option) config {
	cfg := config{sampleInterval: DefaultSampleInterval, maxConnections: DefaultMaxConnections}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// Option tunes NewHandler and Serve.
type Option func(*config)

// WithSampleInterval sets how often the sampler reads the node's clusters,
// which is how often the live page and the metrics update and the
// resolution of the failover histogram. Values of zero or below keep
// DefaultSampleInterval. Once a reading has taken a tenth of the interval,
// the sampler pauses after each further cluster nine times as long as
// reading it took (at most an interval), so that it spends about a tenth
// of the time reading: a node of many clusters, where one reading inspects
// thousands of members, is then read over several intervals.
func WithSampleInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.sampleInterval = d
		}
	}
}

// WithMaxConnections caps how many connections Serve holds open at once;
// more wait in the kernel's backlog until one closes. Values of zero or
// below keep DefaultMaxConnections. NewHandler ignores it.
func WithMaxConnections(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxConnections = n
		}
	}
}

// WithHosts accepts requests whose Host header names one of hosts (without
// a port) on a loopback connection, for a reverse proxy on the same machine
// that forwards a public name; other foreign names are still refused.
func WithHosts(hosts ...string) Option {
	return func(c *config) {
		if c.hosts == nil {
			c.hosts = map[string]bool{}
		}
		for _, h := range hosts {
			c.hosts[strings.ToLower(h)] = true
		}
	}
}

// Handler serves the observer over HTTP. Mount it at the root of a server, or
// under a prefix ending in a slash with http.StripPrefix (the page uses
// relative URLs):
//
//	GET /                      the live web page
//	GET /api/actors            the leader actors on the node, each with its own inspection (JSON)
//	GET /api/clusters          every cluster of the node, every member read (JSON Report)
//	GET /api/clusters/{id}     one cluster (JSON ClusterReport); 404 when the node is not in it
//	GET /api/timeline          every cluster's leadership timeline (JSON []Timeline)
//	GET /api/clusters/{id}/timeline  one cluster's timeline (JSON Timeline)
//	GET /api/events            server-sent events: a Report and the timelines per sample, for the page
//	GET /metrics               Prometheus metrics
//	    /mcp                   the MCP server over the streamable HTTP transport
//
// It has no authentication. A request that reached a loopback address with
// a Host header naming another host is refused (403), on every route, so a
// web page a browser loads from elsewhere cannot read the observer through
// DNS rebinding; WithHosts names the hosts a local reverse proxy forwards. Close it when done: it runs a sampling goroutine.
type Handler struct {
	node    gen.Node
	hosts   map[string]bool
	mux     *http.ServeMux
	metrics *metrics
	sampler *sampler
}

// NewHandler starts observing node and returns the handler serving it. Call
// Close to stop the sampler and every open event stream.
func NewHandler(node gen.Node, opts ...Option) *Handler {
	cfg := resolve(opts)
	h := &Handler{node: node, hosts: cfg.hosts, mux: http.NewServeMux(), metrics: newMetrics(node)}
	h.metrics.report = h.metricsReport
	h.sampler = newSampler(node, cfg.sampleInterval, h.metrics)

	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(h.metrics)
	static, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(fmt.Sprintf("observer: the embedded web directory is missing: %v", err)) // a build defect, not a runtime condition
	}

	h.mux.HandleFunc("GET /{$}", h.serveFile(static, "index.html", "text/html; charset=utf-8"))
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /api/actors", h.serveActors)
	h.mux.HandleFunc("GET /api/clusters", h.serveClusters)
	h.mux.HandleFunc("GET /api/clusters/{cluster}", h.serveCluster)
	h.mux.HandleFunc("GET /api/timeline", h.serveTimelines)
	h.mux.HandleFunc("GET /api/clusters/{cluster}/timeline", h.serveTimeline)
	h.mux.HandleFunc("GET /api/events", h.serveEvents)
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		ErrorLog:      promLogger{node.Log()},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	h.mux.Handle("/mcp", streaming(newMCPHandler(mcpTools{node: node, latest: h.report}, true)))
	return h
}

// ServeHTTP routes a request to the page, the JSON API, the metrics or MCP,
// after refusing a foreign Host header on a loopback connection.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopback(local.String()) && !isLoopback(r.Host) && !h.hosts[hostOf(r.Host)] {
		h.writeError(w, http.StatusForbidden, fmt.Errorf("observer: Host %q is not this loopback server's: %w", r.Host, gen.ErrNotAllowed))
		return
	}
	h.mux.ServeHTTP(w, r)
}

// hostOf is the host of a Host header, lower case, without its port.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		hostport = h
	}
	return strings.ToLower(hostport)
}

// isLoopback reports whether hostport (a host, or host:port) names this
// machine's loopback: localhost, 127.0.0.0/8 or ::1.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Collector returns the handler's Prometheus collector (the per-member
// metrics and the failover histogram), for registering in a registry of the
// caller's own instead of, or besides, serving /metrics.
func (h *Handler) Collector() prometheus.Collector { return h.metrics }

// Close stops the sampler and ends every open event stream. It is safe to
// call more than once.
func (h *Handler) Close() error {
	h.sampler.close()
	return nil
}

func (h *Handler) serveFile(static fs.FS, name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := fs.ReadFile(static, name)
		if err != nil {
			h.writeError(w, http.StatusInternalServerError, fmt.Errorf("observer: reading embedded %s: %w", name, err))
			return
		}
		w.Header().Set("Content-Type", contentType)
		if _, err := w.Write(body); err != nil {
			h.node.Log().Debug("observer: writing %s: %v", name, err)
		}
	}
}

func (h *Handler) serveActors(w http.ResponseWriter, r *http.Request) {
	actors, err := paced(r.Context(), h.sampler.interval, "the leader actors of "+string(h.node.Name()),
		func(pause func(time.Duration) bool) ([]Actor, error) { return actors(h.node, pause) })
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, err)
		return
	}
	h.writeJSON(w, http.StatusOK, struct {
		Node   string  `json:"node"`
		Actors []Actor `json:"actors"`
	}{string(h.node.Name()), actors})
}

// latest is the reading to serve now: the sampler's latest (one interval
// old at most, or one reading's time on a node of many clusters), so a busy
// page, API client or scrape adds no inspection traffic of its own; a
// direct reading once the handler is closed (a collector registered
// elsewhere keeps working); none (ok false) before the first sample.
func (h *Handler) latest() (report Report, ok bool, err error) {
	s, _ := h.sampler.current()
	switch {
	case h.sampler.isClosed():
		report, err = Collect(h.node)
		return report, true, err
	case s.seq > 0:
		return s.report, true, s.err
	}
	return Report{}, false, nil
}

// report is latest, waiting for the first sample up to ctx rather than
// reading the node itself: requests made as the handler starts would each
// read a large node in one burst.
func (h *Handler) report(ctx context.Context) (Report, error) {
	for {
		_, changed := h.sampler.current()
		if report, ok, err := h.latest(); ok {
			return report, err
		}
		select {
		case <-changed:
		case <-h.sampler.quit:
		case <-ctx.Done():
			return emptyReport(h.node), fmt.Errorf("observer: waiting for the first reading of %s: %w", h.node.Name(), ctx.Err())
		}
	}
}

// metricsReport is what a scrape serves: latest, and before the first
// sample no cluster (the scrape then has the node's own counters only).
func (h *Handler) metricsReport() (Report, error) {
	if report, ok, err := h.latest(); ok {
		return report, err
	}
	return emptyReport(h.node), nil
}

func (h *Handler) serveClusters(w http.ResponseWriter, r *http.Request) {
	report, err := h.report(r.Context())
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, err)
		return
	}
	h.writeJSON(w, http.StatusOK, report)
}

func (h *Handler) serveCluster(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("cluster")
	report, err := h.report(r.Context())
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, err)
		return
	}
	cluster, ok := report.Cluster(id)
	if !ok {
		h.writeError(w, http.StatusNotFound, fmt.Errorf("observer: node %s runs no leader actor of cluster %q: %w", h.node.Name(), id, gen.ErrNameUnknown))
		return
	}
	h.writeJSON(w, http.StatusOK, cluster)
}

// timelines is the sampler's latest timelines; empty before the first sample.
func (h *Handler) timelines() []Timeline {
	s, _ := h.sampler.current()
	if s.timelines == nil {
		return []Timeline{}
	}
	return s.timelines
}

func (h *Handler) serveTimelines(w http.ResponseWriter, r *http.Request) {
	h.writeJSON(w, http.StatusOK, h.timelines())
}

func (h *Handler) serveTimeline(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("cluster")
	for _, t := range h.timelines() {
		if t.Cluster == id {
			h.writeJSON(w, http.StatusOK, t)
			return
		}
	}
	h.writeError(w, http.StatusNotFound, fmt.Errorf("observer: no timeline of cluster %q on node %s: %w", id, h.node.Name(), gen.ErrNameUnknown))
}

// liveUpdate is one server-sent event of /api/events.
type liveUpdate struct {
	Report    Report     `json:"report"`
	Timelines []Timeline `json:"timelines"`
	// Error is why this sample could not be collected.
	Error string `json:"error,omitempty"`
	// IntervalMS is the time from this sample to the next, in
	// milliseconds: the sampling interval, or as long as the sample took
	// to collect when that was longer (CollectMS: a node of many clusters
	// is read with pauses, so that reading takes a tenth of the time).
	IntervalMS int64 `json:"interval_ms"`
	// CollectMS is how long this sample took to collect, pauses included,
	// in milliseconds.
	CollectMS int64 `json:"collect_ms"`
}

// serveEvents streams each new sample until the client leaves or the handler
// is closed.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		h.writeError(w, http.StatusInternalServerError, fmt.Errorf("observer: the response writer cannot stream events: %w", gen.ErrUnsupported))
		return
	}
	rc := http.NewResponseController(w)
	keepStreaming(rc)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	var sent uint64
	for {
		s, changed := h.sampler.current()
		if s.seq != sent && s.seq != 0 {
			update := liveUpdate{Report: s.report, Timelines: s.timelines, IntervalMS: (s.took + s.next).Milliseconds(), CollectMS: s.took.Milliseconds()}
			if s.err != nil {
				update.Error = s.err.Error()
			}
			data, err := json.Marshal(update)
			if err != nil {
				h.node.Log().Error("observer: encoding a live update: %v", err)
				return
			}
			if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
				h.node.Log().Debug("observer: event stream to %s: %v", r.RemoteAddr, err)
			}
			if _, err := fmt.Fprintf(w, "event: report\ndata: %s\n\n", data); err != nil {
				h.node.Log().Debug("observer: event stream to %s ended: %v", r.RemoteAddr, err)
				return
			}
			flusher.Flush()
			sent = s.seq
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-h.sampler.quit:
			return
		}
	}
}

// keepStreaming lifts the server's read deadline from a long-lived response
// (an event stream), whose request is complete: otherwise the server would
// end the stream when the deadline passes. Writes keep a deadline, renewed
// per event. Under a plain handler (no deadlines set) it does nothing.
func keepStreaming(rc *http.ResponseController) {
	_ = rc.SetReadDeadline(time.Time{}) // ErrNotSupported outside net/http's server: then no deadline was set
}

// streaming lets MCP's GET streams outlive the server's read and write
// deadlines; its POSTs keep them.
func streaming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			rc := http.NewResponseController(w)
			keepStreaming(rc)
			_ = rc.SetWriteDeadline(time.Time{}) // as keepStreaming
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, fmt.Errorf("observer: encoding JSON: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(append(data, '\n')); err != nil {
		h.node.Log().Debug("observer: writing a JSON response: %v", err)
	}
}

func (h *Handler) writeError(w http.ResponseWriter, status int, err error) {
	if status >= 500 {
		h.node.Log().Error("%v", err)
	}
	data, _ := json.Marshal(map[string]string{"error": err.Error()}) // a map of strings always encodes
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, werr := w.Write(append(data, '\n')); werr != nil {
		h.node.Log().Debug("observer: writing an error response: %v", werr)
	}
}

// promLogger carries promhttp's error reports to the node's log.
type promLogger struct{ log gen.Log }

// Println logs a metrics collection error.
func (l promLogger) Println(v ...any) { l.log.Error("observer: metrics: %s", fmt.Sprint(v...)) }
