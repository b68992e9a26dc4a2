//go:build unix

package mmfcell

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// childEnv names the cell file a re-executed test binary serves as a child
// process; TestMain runs runChild instead of the tests when it is set.
const childEnv = "MMFCELL_TEST_CHILD"

// runChild creates or opens the cell at path and answers commands, one per
// line, from in on out until in ends or says "exit":
//
//	claim G     TryClaim(self, G)           -> "claim true|false"
//	race G N    N rounds of TryClaim, Beat  -> "race true|false" (the last claim)
//	beat        Beat(self)                  -> "beat true|false"
//	stepdown    StepDown(self)              -> "stepdown true|false"
//
// It first writes "ready PID", or "error MESSAGE" if the file is refused.
func runChild(path string, in io.Reader, out io.Writer) int {
	c, err := Create(path)
	if err != nil {
		fmt.Fprintf(out, "error %v\n", err)
		return 0
	}
	defer func() {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "child close: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "ready %d\n", c.Self())
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		words := strings.Fields(lines.Text())
		if len(words) == 0 || words[0] == "exit" {
			return 0
		}
		args := make([]uint64, len(words)-1)
		for i, w := range words[1:] {
			if args[i], err = strconv.ParseUint(w, 10, 64); err != nil {
				fmt.Fprintf(os.Stderr, "child: bad argument in %q: %v\n", lines.Text(), err)
				return 2
			}
		}
		var ok bool
		switch {
		case words[0] == "claim" && len(args) == 1:
			ok = c.TryClaim(c.Self(), args[0])
		case words[0] == "race" && len(args) == 2:
			for range args[1] {
				ok = c.TryClaim(c.Self(), args[0])
				c.Beat(c.Self())
			}
		case words[0] == "beat":
			ok = c.Beat(c.Self())
		case words[0] == "stepdown":
			ok = c.StepDown(c.Self())
		default:
			fmt.Fprintf(os.Stderr, "child: unknown command %q\n", lines.Text())
			return 2
		}
		fmt.Fprintf(out, "%s %t\n", words[0], ok)
	}
	return 0
}
