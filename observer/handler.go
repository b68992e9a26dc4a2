package observer

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
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

// config holds the resolved options of a Handler.
type config struct {
	sampleInterval time.Duration
}

// Option tunes NewHandler and Serve.
type Option func(*config)

// WithSampleInterval sets how often the sampler reads the node's clusters,
// which is both how often the live page updates and the resolution of the
// failover histogram. Values of zero or below keep DefaultSampleInterval.
func WithSampleInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.sampleInterval = d
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
//	GET /api/events            server-sent events: a Report per sample, for the page
//	GET /metrics               Prometheus metrics
//	    /mcp                   the MCP server over the streamable HTTP transport
//
// Close it when done: it runs a sampling goroutine.
type Handler struct {
	node    gen.Node
	mux     *http.ServeMux
	metrics *metrics
	sampler *sampler
}

// NewHandler starts observing node and returns the handler serving it. Call
// Close to stop the sampler and every open event stream.
func NewHandler(node gen.Node, opts ...Option) *Handler {
	cfg := config{sampleInterval: DefaultSampleInterval}
	for _, o := range opts {
		o(&cfg)
	}
	h := &Handler{node: node, mux: http.NewServeMux(), metrics: newMetrics(node)}
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
	h.mux.HandleFunc("GET /api/events", h.serveEvents)
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		ErrorLog:      promLogger{node.Log()},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	h.mux.Handle("/mcp", NewMCPHandler(node))
	return h
}

// ServeHTTP routes a request to the page, the JSON API, the metrics or MCP.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

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
	actors, err := Actors(h.node)
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, err)
		return
	}
	h.writeJSON(w, http.StatusOK, struct {
		Node   string  `json:"node"`
		Actors []Actor `json:"actors"`
	}{string(h.node.Name()), actors})
}

// report is the sampler's latest reading (at most one sample interval old),
// so a busy page or API client adds no inspection traffic of its own; before
// the first sample it collects directly.
func (h *Handler) report() (Report, error) {
	if s, _ := h.sampler.current(); s.seq > 0 {
		return s.report, s.err
	}
	return Collect(h.node)
}

func (h *Handler) serveClusters(w http.ResponseWriter, r *http.Request) {
	report, err := h.report()
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, err)
		return
	}
	h.writeJSON(w, http.StatusOK, report)
}

func (h *Handler) serveCluster(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("cluster")
	report, err := h.report()
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

// liveUpdate is one server-sent event of /api/events.
type liveUpdate struct {
	Report Report `json:"report"`
	// Error is why this sample could not be collected.
	Error string `json:"error,omitempty"`
	// IntervalMS is the sampling interval in milliseconds.
	IntervalMS int64 `json:"interval_ms"`
}

// serveEvents streams each new sample until the client leaves or the handler
// is closed.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		h.writeError(w, http.StatusInternalServerError, fmt.Errorf("observer: the response writer cannot stream events: %w", gen.ErrUnsupported))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	var sent uint64
	for {
		s, changed := h.sampler.current()
		if s.seq != sent && s.seq != 0 {
			update := liveUpdate{Report: s.report, IntervalMS: h.sampler.interval.Milliseconds()}
			if s.err != nil {
				update.Error = s.err.Error()
			}
			data, err := json.Marshal(update)
			if err != nil {
				h.node.Log().Error("observer: encoding a live update: %v", err)
				return
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
