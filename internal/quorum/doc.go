// Package quorum is the majority arithmetic of Regent's election: how many of
// a view make a majority, and a tally that turns the answers of one election
// into pending, won or lost.
//
// It knows nothing of terms, messages or time; the election core decides who
// the voters are and feeds the answers in. Callers must know:
//  1. A view always counts the member that computes it, so sizes start at one.
//  2. A Tally's voters are fixed when it is made; an answer from anyone else
//     is refused, so replies can never grow the quorum of the election they
//     answer. Voters may only be removed (a member that left the view).
//  3. A Tally is a plain value with no lock: one goroutine owns it.
package quorum
