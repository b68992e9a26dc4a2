// Package gen is Regent's vocabulary: the value types, interfaces, messages,
// errors and options shared by the runtime (node), the plain actor (act), the
// election actor (leader) and user code.
//
// It mirrors the names and signatures of the ergo framework's gen package for
// the subset an election actor and its users need, so code written against the
// leader document ports by swapping import paths (docs/porting.md lists every
// difference). gen holds no behaviour beyond small methods on value types and
// imports nothing else of Regent's.
//
// Callers must know:
//  1. Sentinel errors are compared with errors.Is; the runtime wraps them with
//     context.
//  2. A PID is only meaningful together with its node's Creation: a restarted
//     node has a new Creation, and PIDs of its previous life never match.
//  3. The Process handed to a behavior may be used only from that behavior's
//     own callbacks, on the goroutine the runtime runs them on.
package gen
