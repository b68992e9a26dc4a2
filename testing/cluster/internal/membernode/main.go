// Command membernode runs one plain member of a test cluster in its own OS
// process, for the cluster harness's OS-process mode. It reads its Spec from
// the REGENT_MEMBER environment variable (see package memberproc), stops
// gracefully on SIGTERM and abruptly when its standard input closes;
// SIGUSR1 blocks its worker's next handler.
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
	// SIGUSR1 makes a worker's next handler block (memberproc.Worker.Block).
	block := make(chan struct{}, 1)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			block <- struct{}{}
		}
	}()
	go func() {
		// The harness holds our stdin open; EOF means it is gone.
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(abort)
	}()
	if err := memberproc.Run(spec, os.Stdout, stop, abort, block); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
