package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// "Zero rows updated means a newer holder exists, and the caller must stop."
func TestResourceRefusesTheSupersededLeadersLateWrite(t *testing.T) {
	res := resource{dir: t.TempDir()}
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, res))
	assert.Contains(t, out.String(), "is refused")
	entries, err := res.entries()
	require.NoError(t, err)
	require.Len(t, entries, 2, "only the two leaders' writes landed")
	var last uint64
	for _, e := range entries {
		token, err := strconv.ParseUint(strings.Fields(e)[0], 10, 64)
		require.NoError(t, err)
		assert.Greater(t, token, last, "tokens only grow in the ledger")
		last = token
	}
}

func TestResourceRules(t *testing.T) {
	res := resource{dir: t.TempDir()}
	require.NoError(t, res.write(5, "a", "x"))
	require.NoError(t, res.write(5, "a", "same leader again"))
	require.NoError(t, res.write(7, "b", "newer leader"))
	require.ErrorIs(t, res.write(6, "a", "late"), errStaleToken)
	require.ErrorIs(t, res.write(0, "c", "no leadership"), errStaleToken, "token 0 means not leading")
}
