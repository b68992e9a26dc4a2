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
// Every subcommand takes --help. `regent node` also reads its flags from
// REGENT_* environment variables (REGENT_NAME, REGENT_COOKIE, REGENT_CLUSTER,
// REGENT_JOIN, ...); a flag on the command line wins.
//
// Callers must know:
//  1. demo and bench listen on 127.0.0.1 only; node listens where its name says.
//  2. All members of a cluster need the same --cookie and --cluster.
//  3. bench is a measurement, not a test: run it on a quiet machine and read
//     the ratio column against the lower bound, not the absolute figures.
package main
