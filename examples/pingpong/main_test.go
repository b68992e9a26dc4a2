package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestPingPong(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out, logs bytes.Buffer
	require.NoError(t, run(&out, &logs))
	require.Equal(t, "ping 1 -> pong 1\n"+
		"ping 2 -> pong 2\n"+
		"ping 3 -> pong 3\n"+
		"call Ping{42} -> main.Pong{N:42}\n"+
		"connected nodes of ping@127.0.0.1: [pong@127.0.0.1]\n", out.String())
	require.Empty(t, logs.String(), "nothing worth a warning happens")
}
