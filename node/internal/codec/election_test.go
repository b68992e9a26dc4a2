package codec_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
	"github.com/regent-go/regent/node/internal/codec"
	"github.com/regent-go/regent/node/internal/fuzzdrive"
	"github.com/regent-go/regent/node/internal/intern"
)

// electionValues are election messages of every type, with their optional
// parts set and unset, and heartbeat batches.
func electionValues() []codec.NamedValue {
	members := []gen.ProcessID{{Name: "member", Node: "node0@host"}, {Name: "member", Node: "node1@host"}}
	view := &election.View{Stamp: testHeader(1).View, Members: members}
	values := []any{
		election.MessageRequestVote{},
		election.MessageRequestVote{Header: testHeader(1), PreVote: true, Transfer: true, Declared: members, Sent: 1 << 40},
		election.MessageRequestVote{Header: testHeader(2), Declared: []gen.ProcessID{}},
		election.MessageVote{},
		election.MessageVote{Header: testHeader(3), Granted: true, Leader: members[0], View: view, Declared: members, Echo: 1 << 40},
		election.MessageVote{Header: testHeader(4), PreVote: true, View: &election.View{}},
		election.MessageHeartbeat{},
		election.MessageHeartbeat{Header: testHeader(5), View: view, Committed: election.ViewKey{Term: 1 << 62, Epoch: 3}, Sent: 123456789},
		election.MessageHeartbeatAck{},
		election.MessageHeartbeatAck{Header: testHeader(6), Follows: gen.PID{Node: "n", ID: 1, Creation: -1}, Declines: true, Echo: 123456789},
		election.MessageTimeoutNow{},
		election.MessageTimeoutNow{Header: testHeader(7), Ending: true},
		election.MessageMembership{},
		election.MessageMembership{Header: testHeader(8), Add: members, Remove: []gen.Atom{"node2@host", ""}},
		testBatch(0), testBatch(1), testBatch(6),
	}
	named := make([]codec.NamedValue, len(values))
	for i, v := range values {
		named[i] = codec.NewNamedValue(fmt.Sprintf("%d-%T", i, v), v)
	}
	return named
}

func TestElectionMessagesMatchTheGoldenFile(t *testing.T) {
	codec.CheckGolden(t, "election.golden", batchRegistry(t), electionValues())
}

// TestElectionMessagesRoundTrip checks that every election message and
// heartbeat batch decodes to an equal value, with and without an intern table.
func TestElectionMessagesRoundTrip(t *testing.T) {
	r := batchRegistry(t)
	dec := r.NewDecoder(intern.New(64, 4096))
	for _, v := range append(electionValues(), codec.NewNamedValue("batch-20", testBatch(20))) {
		b, err := r.Encode(nil, v.Value())
		require.NoError(t, err, v.Name())
		got, err := r.Decode(b)
		require.NoError(t, err, v.Name())
		require.Equal(t, v.Value(), got, v.Name())
		got, err = dec.Decode(b)
		require.NoError(t, err, v.Name())
		require.Equal(t, v.Value(), got, v.Name())
	}
}

// electionSeeds are the encodings of electionValues.
func electionSeeds(tb testing.TB, r *codec.Registry) [][]byte {
	var seeds [][]byte
	for _, v := range electionValues() {
		b, err := r.Encode(nil, v.Value())
		require.NoError(tb, err, v.Name())
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzDecodeElection feeds mutated election messages and heartbeat batches
// to Decode; see codec.DecodesAsDocumented.
func FuzzDecodeElection(f *testing.F) {
	r := batchRegistry(f)
	fuzzdrive.Fuzz(f, electionSeeds(f, r), codec.DecodesAsDocumented(r))
}

// FuzzDecodeElectionAllocation bounds what decoding them allocates; see
// codec.DecodesWithinBound.
func FuzzDecodeElectionAllocation(f *testing.F) {
	r := batchRegistry(f)
	fuzzdrive.Fuzz(f, electionSeeds(f, r), codec.DecodesWithinBound(r))
}

func TestRandomizedElectionMessagesDecodeWithinTheAllocationBound(t *testing.T) {
	r := batchRegistry(t)
	fuzzdrive.Run(t, electionSeeds(t, r), codec.DecodesWithinBound(r))
}
