// Command regent runs, watches and measures Regent leader elections.
//
//	regent demo      five members in one process on loopback TCP, with a
//	                 schedule of failures and a live observer page
//	regent node      one member as its own OS process; several form a cluster
//	regent inspect   a cluster's state as a table (or JSON), read from any member
//	regent bench     failover latency against its theoretical lower bound
//	regent bench scale
//	                 many clusters in one process: time to elect, CPU, memory, traffic
//
// Every subcommand takes --help, and flags may come anywhere on the line. `regent
// node` and `regent inspect` also read their flags from REGENT_* environment
// variables (REGENT_NAME, REGENT_COOKIE, REGENT_COOKIE_FILE, REGENT_CLUSTER,
// REGENT_JOIN, ...); a flag on the command line wins. A usage error exits
// with status 2 and names the flag to fix.
//
// Callers must know:
//  1. demo and bench listen on 127.0.0.1 only, with a random cookie; node
//     listens where its name says (name@host:port, port required).
//  2. All members of a cluster need the same cookie ($REGENT_COOKIE or
//     --cookie-file; --cookie shows in ps) and --cluster; --tls-cert,
//     --tls-key and --tls-ca add mutually authenticated TLS.
//  3. --observer serves an unauthenticated page: bind it to a trusted address.
//  4. Every line (role changes and the runtime's) goes through one slog
//     handler: text for a terminal or --log-format json.
//  5. bench is a measurement, not a test: run it on a quiet machine and read
//     the ratio column against the lower bound, not the absolute figures.
package main
