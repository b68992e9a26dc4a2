package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/regent-go/regent/gen"
)

// TestMain runs the members too: the walkthrough re-executes this test
// binary with the child's environment.
func TestMain(m *testing.M) {
	if isChild() {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(m)
}

// walkthrough runs the program's walkthrough and returns its report, its
// one round and what it printed.
func walkthrough(t *testing.T, shortcut bool) (report, round, string) {
	t.Helper()
	var out bytes.Buffer
	rep, err := run(context.Background(), &out, testConfig(shortcut))
	require.NoError(t, err)
	require.Len(t, rep.Rounds, 1)
	return rep, rep.Rounds[0], out.String()
}

// testConfig is three members and one kill, with a generous bound on every
// wait for a loaded machine.
func testConfig(shortcut bool) config {
	return config{members: 3, rounds: 1, shortcut: shortcut, settle: 30 * time.Second}
}

// requireCleanStop checks that every child process is gone and the
// temporary directory removed.
func requireCleanStop(t *testing.T, rep report) {
	t.Helper()
	_, err := os.Stat(rep.Dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "the temporary directory %s remains", rep.Dir)
	require.NotEmpty(t, rep.PIDs)
	for _, pid := range rep.PIDs {
		assert.True(t, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), "child process %d was not reaped", pid)
	}
}

func TestWalkthroughWithTheShortcut(t *testing.T) {
	rep, r, out := walkthrough(t, true)

	t.Run("the member with the lowest PID holds the cell and is the first leader", func(t *testing.T) {
		assert.NotEmpty(t, rep.FirstHolder)
		assert.Equal(t, rep.FirstHolder, rep.FirstLeader)
	})
	t.Run("killing the leader, which holds the cell, hands the cell to a survivor", func(t *testing.T) {
		assert.Equal(t, rep.FirstLeader, r.Killed)
		assert.True(t, r.KilledHeld)
		assert.NotEmpty(t, r.NewHolder)
		assert.NotEqual(t, r.Killed, r.NewHolder)
		assert.NotEmpty(t, r.FinalHolder)
		assert.NotEqual(t, r.Killed, r.FinalHolder)
	})
	t.Run("a survivor leads at a higher term", func(t *testing.T) {
		assert.NotEmpty(t, r.NewLeader)
		assert.NotEqual(t, r.Killed, r.NewLeader)
		assert.Greater(t, r.NewTerm, r.OldTerm)
		assert.Positive(t, r.Campaigns)
	})
	t.Run("the walkthrough names the member that won, and says so when it is not the cell's new holder", func(t *testing.T) {
		assert.Contains(t, out, fmt.Sprintf("round 1: %s won the election: it leads at term %d", r.NewLeader, r.NewTerm))
		notHolder := fmt.Sprintf("the winner %s is not %s", r.NewLeader, r.NewHolder)
		if r.ClaimedLead {
			assert.NotContains(t, out, notHolder)
		} else {
			assert.Contains(t, out, notHolder)
		}
	})
	t.Run("every child is reaped and the temporary directory removed", func(t *testing.T) {
		requireCleanStop(t, rep)
	})
}

func TestWalkthroughWithoutTheShortcut(t *testing.T) {
	rep, r, _ := walkthrough(t, false)

	t.Run("no member holds a cell", func(t *testing.T) {
		assert.Empty(t, rep.FirstHolder)
		assert.False(t, r.KilledHeld)
		assert.Empty(t, r.FinalHolder)
	})
	t.Run("killing the leader makes a survivor lead at a higher term", func(t *testing.T) {
		assert.Equal(t, rep.FirstLeader, r.Killed)
		assert.NotEmpty(t, r.NewLeader)
		assert.NotEqual(t, r.Killed, r.NewLeader)
		assert.Greater(t, r.NewTerm, r.OldTerm)
	})
	t.Run("every child is reaped and the temporary directory removed", func(t *testing.T) {
		requireCleanStop(t, rep)
	})
}

func TestMeasureReportsBothConfigurations(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, measure(context.Background(), &out, testConfig(true), 1))
	assert.Contains(t, out.String(), "shortcut=true ")
	assert.Contains(t, out.String(), "shortcut=false ")
}

func TestRunRefusesFewerThanThreeMembers(t *testing.T) {
	_, err := run(context.Background(), io.Discard, config{members: 2, rounds: 1, settle: time.Second})
	require.ErrorIs(t, err, gen.ErrIncorrect)
}

func TestPercentileIsNearestRank(t *testing.T) {
	sorted := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.Equal(t, time.Duration(5), percentile(sorted, 50))
	assert.Equal(t, time.Duration(10), percentile(sorted, 99))
	assert.Equal(t, time.Duration(1), percentile(sorted, 1))
	assert.Zero(t, percentile(nil, 50))
}
