package quorum

// Majority is the number of members of a view of size n, counting the member
// that computes it, needed to win: more than half (1→1, 2→2, 3→2, 4→3, 5→3).
// A size below one is treated as one, since a view always holds its owner.
func Majority(n int) int {
	if n < 1 {
		n = 1
	}
	return n/2 + 1
}

// Reached reports whether count members out of a view of size n are a majority.
func Reached(count, n int) bool {
	return count >= Majority(n)
}

// Result is the state of one election's tally.
type Result int

const (
	// Pending: neither a majority of grants nor of refusals yet.
	Pending Result = iota
	// Won: a majority of the voters granted.
	Won
	// Lost: so many refused that a majority of grants is no longer possible.
	Lost
)

// String names the result as logs and inspection show it.
func (r Result) String() string {
	switch r {
	case Pending:
		return "pending"
	case Won:
		return "won"
	case Lost:
		return "lost"
	}
	return "unknown"
}

// Tally counts the answers of a fixed set of voters in one election; the
// first answer of each voter counts and later ones are ignored.
type Tally[K comparable] struct {
	order   []K        // voters in the order given, for stable listings
	answers map[K]int8 // 0 no answer yet, 1 granted, -1 refused
}

// NewTally starts a tally over voters; duplicates count once.
func NewTally[K comparable](voters []K) *Tally[K] {
	t := &Tally[K]{answers: make(map[K]int8, len(voters))}
	for _, v := range voters {
		if _, ok := t.answers[v]; ok {
			continue
		}
		t.answers[v] = 0
		t.order = append(t.order, v)
	}
	return t
}

// Record stores voter's answer. It reports false, changing nothing, when
// voter is not one of the tally's voters or has already answered.
func (t *Tally[K]) Record(voter K, granted bool) bool {
	a, ok := t.answers[voter]
	if !ok || a != 0 {
		return false
	}
	if granted {
		t.answers[voter] = 1
	} else {
		t.answers[voter] = -1
	}
	return true
}

// Add makes voter part of the election, raising its quorum, for a member that
// joined the view while the election ran. A voter already counted is ignored.
func (t *Tally[K]) Add(voter K) {
	if _, ok := t.answers[voter]; ok {
		return
	}
	t.answers[voter] = 0
	t.order = append(t.order, voter)
}

// Has reports whether voter takes part in this election.
func (t *Tally[K]) Has(voter K) bool {
	_, ok := t.answers[voter]
	return ok
}

// Size is the number of voters, the denominator of the quorum.
func (t *Tally[K]) Size() int { return len(t.order) }

// Quorum is the number of grants needed to win.
func (t *Tally[K]) Quorum() int { return Majority(len(t.order)) }

// Granted counts the grants so far.
func (t *Tally[K]) Granted() int { return t.count(1) }

// Refused counts the refusals so far.
func (t *Tally[K]) Refused() int { return t.count(-1) }

// GrantedBy lists the voters that granted, in the order the tally was given.
func (t *Tally[K]) GrantedBy() []K {
	var out []K
	for _, v := range t.order {
		if t.answers[v] == 1 {
			out = append(out, v)
		}
	}
	return out
}

// Result says whether the election is won, lost or still pending.
func (t *Tally[K]) Result() Result {
	q := t.Quorum()
	switch {
	case t.Granted() >= q:
		return Won
	case len(t.order)-t.Refused() < q:
		return Lost
	}
	return Pending
}

func (t *Tally[K]) count(want int8) int {
	n := 0
	for _, a := range t.answers {
		if a == want {
			n++
		}
	}
	return n
}
