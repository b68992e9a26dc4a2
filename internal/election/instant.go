package election

import (
	"math"
	"time"
)

// instant is a time on a member's clock in one word: its offset from the
// Core's origin (clock), kept one nanosecond further from zero when not
// negative, so that zero stands for no time (a zero time.Time) and the order
// of instants is that of their times. A member holds a handful of times per
// peer; a time.Time takes three words.
type instant int64

// offset is how long after the origin i is.
func (i instant) offset() time.Duration {
	if i > 0 {
		return time.Duration(i - 1)
	}
	return time.Duration(i)
}

// IsZero reports whether i stands for no time.
func (i instant) IsZero() bool { return i == 0 }

// Sub is i-j, as time.Time.Sub would give for their times; neither may be
// zero.
func (i instant) Sub(j instant) time.Duration { return i.offset() - j.offset() }

// clock converts between times and instants. The origin is the time the
// Core was made at: the differences of instants are those of the times
// (monotonic readings stay monotonic), and a time turned into an instant and
// back compares to any other exactly as it did.
type clock struct{ origin time.Time }

// clock turns the times the core keeps (and its peers') into instants:
// one word each instead of a time.Time's three.
func (c *Core) clock() clock { return clock{c.cfg.Origin} }

// Stamp is t as the stamp a member whose clock counts from origin
// (Config.Origin) puts on a message sent at t (MessageHeartbeat.Sent);
// zero for a zero t.
func Stamp(origin, t time.Time) int64 { return int64(clock{origin}.at(t)) }

// StampTime is the time of stamp s of a member whose clock counts from
// origin; the zero time for a zero s.
func StampTime(origin time.Time, s int64) time.Time { return clock{origin}.time(instant(s)) }

// evidence is the instant a reply that echoes the stamp echo and arrived at
// arrived shows its sender heard this member: when what it answers was
// sent. Zero for no stamp, or one after the arrival, which this member's
// clock did not make.
func evidence(echo int64, arrived instant) instant {
	if sent := instant(echo); !sent.IsZero() && sent <= arrived {
		return sent
	}
	return 0
}

// EvidenceAt is the evidence rule (Core's evidenceOf) for a shell that takes
// replies for members whose clocks count from origin: the time a reply
// echoing echo and arrived at arrived counts from, and false when it
// counts for nothing.
func EvidenceAt(origin time.Time, echo int64, arrived time.Time) (time.Time, bool) {
	k := clock{origin}
	at := evidence(echo, k.at(arrived))
	return k.time(at), !at.IsZero()
}

// at is t as an instant; zero for a zero t.
func (k clock) at(t time.Time) instant {
	if t.IsZero() {
		return 0
	}
	d := t.Sub(k.origin)
	if d < 0 {
		return instant(d)
	}
	if d == math.MaxInt64 {
		d-- // t.Sub saturated: t is centuries away
	}
	return instant(d + 1)
}

// time is i as a time; the zero time for a zero i.
func (k clock) time(i instant) time.Time {
	if i == 0 {
		return time.Time{}
	}
	return k.origin.Add(i.offset())
}
