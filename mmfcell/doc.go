// Package mmfcell is a same-host leader cell: a 64-byte header in a
// memory-mapped file that every process on the host opens, and on which they
// agree who leads by lowest live PID. A process claims the cell when it is
// empty, when its PID is lower than the recorded leader's, or when the
// recorded leader is unfit: its process is gone (dead, a zombie, or its PID
// now names a different process), or its heartbeat is more than a grace
// number of epochs behind the global epoch. Every handover increments the
// term. There is no quorum and no network: it is a shortcut for members that
// share a host, and the election actor (package leader) uses it as one.
//
// # File layout
//
// The file is exactly HeaderSize (64) bytes, one cache line: the mapping
// starts on a page boundary, so the header is cache-line aligned. Multi-byte
// fields are in the host's native byte order (little-endian on every platform
// Regent supports); the cell never leaves its host.
//
//	bytes  0..3   magic: the ASCII bytes "RGNC"
//	bytes  4..7   version, uint32: 1
//	bytes  8..15  leader word, uint64 updated as one atomic word:
//	                bytes  8..11  leader PID, uint32 (0 = no leader)
//	                bytes 12..15  term, uint32 (incremented by every claim)
//	bytes 16..23  leader heartbeat, uint64: the global epoch at the leader's
//	              last beat; it only ever grows
//	bytes 24..31  global epoch, uint64: advanced by TickEpoch and AdvanceEpoch
//	bytes 32..39  identity word, uint64 updated as one atomic word:
//	                bytes 32..35  the term this identity belongs to, uint32
//	                bytes 36..39  the leader's process fingerprint, uint32
//	                              (0 = unknown)
//	bytes 40..47  last epoch advance, uint64: Unix nanoseconds of the last
//	              advance made by AdvanceEpoch
//	bytes 48..55  owner, uint64: what the cell serves (WithOwner), set by
//	              the first Create or Open that names one; 0 = none yet
//	bytes 56..63  reserved, zero
//
// # Memory ordering
//
// Each field that changes is one naturally aligned 8-byte word accessed only
// through sync/atomic, whose operations are sequentially consistent in the Go
// memory model; two processes mapping the same file share the physical page,
// so the same hardware coherence that orders two threads orders them. No
// reader ever sees half a word. The argument for the fields that must agree:
//
//  1. PID and term share the leader word, so a handover and its term
//     increment are one compare-and-swap: a reader never sees a new leader
//     with the old term, and a lost race simply retries.
//  2. The leader's fingerprint cannot fit in that word, so it is published
//     after the swap in the identity word, tagged with the term it belongs to,
//     and the tag only moves forward (a compare-and-swap that refuses an older
//     term). A reader pairs the fingerprint with the leader word only when the
//     tags are equal; otherwise the identity is treated as unknown and the
//     leader's liveness falls back to whether its PID exists. So the torn
//     state "new leader, predecessor's fingerprint" is never believed, and a
//     claimer killed between the swap and the publication is still seen dead.
//  3. A claimer raises the heartbeat to the current epoch before its swap, so
//     any reader that sees the new leader word also sees a heartbeat at least
//     that fresh: a newly installed leader is never judged stale by its
//     predecessor's old heartbeat. The heartbeat only grows, so a delayed
//     writer cannot make the current leader look older than it is.
//
// # Process identity
//
// On Linux the fingerprint hashes the kernel's boot ID with the process start
// time (field 22 of /proc/PID/stat), so a PID reused by a new process, even
// after a reboot when the file lives on disk, is not mistaken for the old
// leader. Liveness is kill(pid, 0): ESRCH means dead, EPERM means alive (it
// exists but belongs to another user); a zombie counts as dead. On other Unix
// systems the fingerprint is unknown (0), so only kill(pid, 0) is used and a
// reused PID is not detected until the heartbeat goes stale. Outside Unix
// (Windows) Create and Open fail with an error wrapping gen.ErrUnsupported.
// The probe is replaceable with WithProbe (tests use fake PIDs). A pidfd
// would also pin a process's identity, but only for the process holding it;
// the start time works for any process reading the file.
//
// # Caller's duties
//
//  1. All members share one PID namespace (a container with its own namespace
//     sees different PIDs) and open the same file, preferably on a tmpfs such
//     as /dev/shm.
//  2. Something must advance the epoch, or heartbeat staleness never fires:
//     call AdvanceEpoch(period) on a timer in every member (the leader
//     included), which advances the epoch at most once per period however
//     many members call it; or have the leader call TickEpoch. Do not mix the
//     two, or the epoch runs faster than intended.
//  3. The leader calls Beat at least once per epoch, and picks graceEpochs
//     larger than its longest expected pause (GC, scheduling) in epochs.
//  4. A dead leader is detected at once; a live but silent one only after
//     graceEpochs. Leadership is advisory: it is not a lease, and a paused
//     leader can be replaced while it still believes it leads. Check Beat's
//     result before acting as leader.
//  5. A Cell may be used from many goroutines at once, except Close, which
//     must come after every other call has returned; no method may be called
//     after Close.
package mmfcell
