// Command membernode runs one plain member of a test cluster in its own OS
// process, for the cluster harness's OS-process mode. It reads its Spec from
// the REGENT_MEMBER environment variable (see package memberproc), stops
// gracefully on SIGTERM and abruptly when its standard input closes.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/regent-go/regent/testing/cluster/internal/memberproc"
)

func main() {
	spec, err := memberproc.Decode(os.Getenv(memberproc.EnvSpec))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	stop, abort := make(chan struct{}), make(chan struct{})
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-signals
		close(stop)
	}()
	go func() {
		// The harness holds our stdin open; EOF means it is gone.
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(abort)
	}()
	if err := memberproc.Run(spec, os.Stdout, stop, abort); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
