//go:build !unix

package mmfcell

// SystemProbe is the default Probe. Outside Unix no cell can be opened, so it
// only answers conservatively: alive, with an unknown fingerprint.
func SystemProbe(pid uint32) ProcessState {
	return ProcessState{Alive: pid != NoLeader}
}
