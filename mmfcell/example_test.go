//go:build unix

package mmfcell_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/regent-go/regent/mmfcell"
)

// A member claims the cell, beats on its timer while it leads, and steps
// down when it stops, so the next member takes over at once.
func Example() {
	dir, err := os.MkdirTemp("", "mmfcell")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	cell, err := mmfcell.Create(filepath.Join(dir, "leader.cell"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cell.Close()

	me := cell.Self()
	fmt.Println("leading:", cell.TryClaim(me, mmfcell.DefaultGraceEpochs))
	for range 3 { // in a member, each round is a timer firing
		cell.AdvanceEpoch(100 * time.Millisecond)
		if !cell.Beat(me) {
			fmt.Println("replaced")
			return
		}
	}
	fmt.Println("term:", cell.Term(), "stale:", cell.IsStale(mmfcell.DefaultGraceEpochs))
	fmt.Println("stepped down:", cell.StepDown(me))
	// Output:
	// leading: true
	// term: 1 stale: false
	// stepped down: true
}
