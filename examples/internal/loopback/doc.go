// Package loopback starts the examples' nodes: several Regent nodes in one
// process, on free 127.0.0.1 ports, routed to each other directly or through
// a fault-injecting mesh. It exists so each example's main.go shows the
// election, not the plumbing.
//
// Callers must know:
//  1. Stop every node Start returned (StopAll), and Close the mesh if one was
//     given, or their goroutines outlive the example.
//  2. The nodes use LogLevelError so the examples' own output stays readable.
package loopback
