package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/testing/loopback"
)

// netFlags are the flags every command that joins a deployment takes: where
// the cookie comes from and the TLS files.
type netFlags struct {
	cookie, cookieFile     string
	tlsCert, tlsKey, tlsCA string

	// Set by resolve.
	resolvedCookie string
	resolvedTLS    *tls.Config
	// resolvedHost is the host a short-lived node of this command claims in
	// its name: one its certificate names, since peers bind certificates to
	// node names; 127.0.0.1 without TLS.
	resolvedHost            string
	cookieFromCommandLine   bool // --cookie was typed, so ps shows it
	cookieFileWorldReadable bool // the file's mode lets others read it
}

// register adds the flags to fs.
func (n *netFlags) register(fs *flagSet) {
	fs.StringVar(&n.cookieFile, "cookie-file", "", "read the cluster's shared secret from this `FILE` (one line; keep it mode 0600)")
	fs.StringVar(&n.cookie, "cookie", "", "the cluster's shared `SECRET`; prefer $REGENT_COOKIE or --cookie-file, since every user of the machine sees a flag in ps")
	fs.StringVar(&n.tlsCert, "tls-cert", "", "`PEM` certificate this node presents, as server and as client (with --tls-key and --tls-ca: TLS with client certificates)")
	fs.StringVar(&n.tlsKey, "tls-key", "", "`PEM` private key of --tls-cert")
	fs.StringVar(&n.tlsCA, "tls-ca", "", "`PEM` certificate authority that peers' certificates must chain to")
}

// resolve settles the cookie and the TLS configuration once the flags and
// the environment are read. typed reports whether --cookie was on the
// command line (not from the environment).
func (n *netFlags) resolve(typed bool) error {
	switch {
	case n.cookie != "" && n.cookieFile != "":
		return usageError("--cookie and --cookie-file both given; keep one")
	case n.cookieFile != "":
		data, err := os.ReadFile(n.cookieFile)
		if err != nil {
			return usageError("--cookie-file: %v", err)
		}
		n.resolvedCookie = strings.TrimSpace(string(data))
		if n.resolvedCookie == "" {
			return usageError("--cookie-file %s is empty", n.cookieFile)
		}
		if st, err := os.Stat(n.cookieFile); err == nil && st.Mode().Perm()&0o077 != 0 {
			n.cookieFileWorldReadable = true
		}
	case n.cookie != "":
		n.resolvedCookie = n.cookie
		n.cookieFromCommandLine = typed
	default:
		return usageError("no cookie: set $REGENT_COOKIE or --cookie-file (every node of a cluster needs the same secret)")
	}
	cfg, err := tlsConfig(n.tlsCert, n.tlsKey, n.tlsCA)
	if err != nil {
		return err
	}
	n.resolvedTLS = cfg
	n.resolvedHost = certificateHost(cfg)
	return nil
}

// options are the runtime's network options for these flags: TLS with the
// certificate bound to the node name each peer claims (a peer whose
// certificate does not name the host of its node name is refused), or the
// cookie alone.
func (n *netFlags) options() gen.NetworkOptions {
	return gen.NetworkOptions{TLS: n.resolvedTLS, TLSVerifyNodeName: n.resolvedTLS != nil}
}

// certificateHost is the first IP address or DNS name cfg's certificate
// names, or 127.0.0.1 without one.
func certificateHost(cfg *tls.Config) string {
	if cfg != nil && len(cfg.Certificates) > 0 && len(cfg.Certificates[0].Certificate) > 0 {
		if leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err == nil {
			switch {
			case len(leaf.IPAddresses) > 0:
				return leaf.IPAddresses[0].String()
			case len(leaf.DNSNames) > 0:
				return leaf.DNSNames[0]
			}
		}
	}
	return "127.0.0.1"
}

// warnings are what an operator should hear about the secret's handling.
func (n *netFlags) warnings() []string {
	var out []string
	if n.cookieFromCommandLine {
		out = append(out, "--cookie on the command line is visible to every user of this machine (ps, /proc); use $REGENT_COOKIE or --cookie-file")
	}
	if n.cookieFileWorldReadable {
		out = append(out, fmt.Sprintf("--cookie-file %s can be read by other users; chmod 600 it", n.cookieFile))
	}
	return out
}

// notice says what protects the traffic, for the start-up lines.
func (n *netFlags) notice() string {
	if n.resolvedTLS == nil {
		return "connections are authenticated by the cookie, not encrypted (--tls-cert, --tls-key, --tls-ca add TLS)"
	}
	return "connections use TLS 1.3 with client certificates bound to node names, and the cookie"
}

// tlsConfig builds mutually authenticated TLS from the three files: this
// node's certificate serves both as server and as client, and a peer must
// present one that chains to the CA. All three or none.
func tlsConfig(certFile, keyFile, caFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" && caFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, usageError("--tls-cert, --tls-key and --tls-ca go together: TLS here is mutual, so each node needs its certificate, its key and the CA")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usageError("--tls-cert %s / --tls-key %s: %v", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, usageError("--tls-ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usageError("--tls-ca %s holds no PEM certificate", caFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// checkNodeName refuses a node name that peers could not dial: one without
// name@host:port. what is the flag, for the message.
func checkNodeName(what, name string) error {
	local, hostPort, ok := strings.Cut(name, "@")
	if !ok || local == "" || hostPort == "" {
		return usageError("%s %q: a node name is name@host:port, e.g. n1@10.0.0.1:4370", what, name)
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil || host == "" || port == "" {
		return usageError("%s %q has no port: peers dial a node at the port in its name, so write %s@%s:PORT (e.g. :4370)", what, name, local, strings.TrimSuffix(hostPort, ":"))
	}
	return nil
}

// cause says in a few words why a node could not be reached, from the
// runtime's error: the connection was refused, the cookie is wrong, the
// host does not resolve, nothing answered in time, or no member runs there.
func cause(err error) string {
	var dns *net.DNSError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, gen.ErrUnauthorized):
		return "wrong cookie: the node refused this one's proof of the shared secret (or this one refused its)"
	case errors.As(err, &dns) && dns.IsNotFound:
		return fmt.Sprintf("no such host %q", dns.Name)
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot resolve %q: %v", dns.Name, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens at that address (is the node running, at that port?)"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable: no network path to it"
	case isTimeout(err):
		return "no answer in time: the host drops the connection (a firewall?) or the node is stalled"
	case errors.Is(err, gen.ErrNoRoute):
		return "no route: the name has no port, or a different node answers at its address"
	case errors.Is(err, gen.ErrProcessUnknown), errors.Is(err, gen.ErrNameUnknown):
		return "the node answers but runs no election member under that name (--member)"
	case errors.Is(err, gen.ErrIncorrect):
		return "the process that answered is not a leader actor"
	case errors.Is(err, errHandshake):
		return err.Error()
	}
	var tlsErr *tls.CertificateVerificationError
	if errors.As(err, &tlsErr) || strings.Contains(err.Error(), "tls:") {
		return fmt.Sprintf("TLS handshake failed: %v", err)
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, gen.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// realCause reports whether err carries a cause worth showing, rather than
// the runtime's fast refusal while it backs off after a failed dial.
func realCause(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	return errors.Is(err, gen.ErrUnauthorized) || errors.As(err, &dns) || errors.As(err, &op) || isTimeout(err) ||
		errors.Is(err, gen.ErrProcessUnknown) || errors.Is(err, gen.ErrNameUnknown) || errors.Is(err, gen.ErrNoRoute) ||
		errors.Is(err, gen.ErrIncorrect)
}

// clientFlags are the flags of a command that reads or drives a running
// cluster from a short-lived node of its own (inspect, reform).
type clientFlags struct {
	net     netFlags
	member  string
	routes  listFlag
	timeout time.Duration

	resolvedRoutes map[gen.Atom]string // set by target
}

// register adds the flags to fs; timeoutUsage says what the timeout bounds.
func (c *clientFlags) register(fs *flagSet, timeoutUsage string) {
	c.net.register(fs)
	fs.StringVar(&c.member, "member", string(memberName), "registered name of the election actor")
	fs.Var(&c.routes, "route", "NAME=HOST:PORT for a node whose name has no port; repeat or comma-separate")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, timeoutUsage)
}

// target settles the flags once fs is parsed and names the election actor on
// the one node argument in rest.
func (c *clientFlags) target(fs *flagSet, command string, rest []string) (gen.ProcessID, error) {
	if len(rest) != 1 {
		return gen.ProcessID{}, usageError("give exactly one node name, e.g. regent %s n1@127.0.0.1:4370 (got %d)", command, len(rest))
	}
	if err := c.net.resolve(fs.typed["cookie"]); err != nil {
		return gen.ProcessID{}, err
	}
	if len(c.routes) == 0 {
		if err := checkNodeName("NODE", rest[0]); err != nil {
			return gen.ProcessID{}, err
		}
	}
	c.resolvedRoutes = map[gen.Atom]string{}
	for _, r := range c.routes {
		name, addr, ok := strings.Cut(r, "=")
		if !ok {
			return gen.ProcessID{}, usageError("--route %q is not NAME=HOST:PORT", r)
		}
		c.resolvedRoutes[gen.Atom(name)] = addr
	}
	return gen.ProcessID{Name: gen.Atom(c.member), Node: gen.Atom(rest[0])}, nil
}

// start starts the short-lived node the command reads or drives the cluster
// from, with the cluster's cookie, TLS and routes.
func (c *clientFlags) start(command string) (gen.Node, error) {
	self := gen.Atom(fmt.Sprintf("regent-%s-%d-%d@%s", command, os.Getpid(), time.Now().UnixNano()%1e6, c.net.resolvedHost))
	o := c.net.options()
	o.Routes, o.Acceptor, o.HandshakeTimeout = c.resolvedRoutes, gen.AcceptorOptions{Host: loopback.Host}, c.timeout
	n, err := loopback.StartNode(self, loopback.Options{Cookie: c.net.resolvedCookie, Network: o})
	if err != nil {
		return nil, fmt.Errorf("starting the %s node: %w", command, err)
	}
	return n, nil
}
