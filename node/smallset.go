package node

// smallSet is a set that keeps its first element inline, the next few in a
// slice, and moves to a map only when it grows past smallSetMax. Most
// relations sets hold one to four watchers (a member's monitors of its
// peers): kept by value in its map, a set of one costs no allocation of its
// own, and a few cost two small ones, where a map costs several hundred
// bytes; a target watched by thousands still removes in constant time.
//
// The zero T marks an empty first, so it is never an element: the relations'
// records all have a kind. A set is a value: the relations read it from
// their map, change the copy and store it back (or delete it once empty);
// what more points to is shared with the copy it was read from, which is
// dropped.
type smallSet[T comparable] struct {
	first T
	more  *smallSetMore[T] // nil until a second element comes
}

// smallSetMore holds what a smallSet keeps beyond its first element.
type smallSetMore[T comparable] struct {
	rest []T            // the elements after first while fewer than smallSetMax
	many map[T]struct{} // non-nil once the set outgrew first and rest, which are then empty
}

// smallSetMax is the most elements kept in first and rest.
const smallSetMax = 8

// smallSetRest is rest's capacity when first made: enough for a member's
// four peers without growing.
const smallSetRest = 3

// add inserts v, never the zero T, and reports whether it was new.
func (s *smallSet[T]) add(v T) bool {
	var zero T
	if s.more != nil && s.more.many != nil {
		if _, ok := s.more.many[v]; ok {
			return false
		}
		s.more.many[v] = struct{}{}
		return true
	}
	if s.has(v) {
		return false
	}
	switch {
	case s.first == zero:
		s.first = v
	case s.more == nil:
		s.more = &smallSetMore[T]{rest: append(make([]T, 0, smallSetRest), v)}
	case 1+len(s.more.rest) < smallSetMax:
		s.more.rest = append(s.more.rest, v)
	default:
		many := make(map[T]struct{}, 2*smallSetMax)
		many[s.first] = struct{}{}
		for _, x := range s.more.rest {
			many[x] = struct{}{}
		}
		many[v] = struct{}{}
		s.first, s.more.rest, s.more.many = zero, nil, many
	}
	return true
}

// remove deletes v and reports whether it was there.
func (s *smallSet[T]) remove(v T) bool {
	var zero T
	if v == zero {
		return false
	}
	if s.more != nil && s.more.many != nil {
		if _, ok := s.more.many[v]; !ok {
			return false
		}
		delete(s.more.many, v)
		return true
	}
	var rest []T
	if s.more != nil {
		rest = s.more.rest
	}
	last := len(rest) - 1
	switch {
	case s.first == v && last < 0:
		s.first = zero
		return true
	case s.first == v:
		s.first = rest[last]
		rest[last] = zero
		s.more.rest = rest[:last]
		return true
	}
	for i, x := range rest {
		if x == v {
			rest[i] = rest[last]
			rest[last] = zero
			s.more.rest = rest[:last]
			return true
		}
	}
	return false
}

// has reports whether v is in the set.
func (s *smallSet[T]) has(v T) bool {
	var zero T
	switch {
	case v == zero:
		return false
	case s.more != nil && s.more.many != nil:
		_, ok := s.more.many[v]
		return ok
	case s.first == v:
		return true
	case s.more == nil:
		return false
	}
	for _, x := range s.more.rest {
		if x == v {
			return true
		}
	}
	return false
}

// len is the number of elements.
func (s *smallSet[T]) len() int {
	var zero T
	switch {
	case s.more != nil && s.more.many != nil:
		return len(s.more.many)
	case s.first == zero:
		return 0
	case s.more == nil:
		return 1
	}
	return 1 + len(s.more.rest)
}

// appendTo appends the elements to out, in no particular order.
func (s *smallSet[T]) appendTo(out []T) []T {
	var zero T
	if s.more != nil && s.more.many != nil {
		for v := range s.more.many {
			out = append(out, v)
		}
		return out
	}
	if s.first != zero {
		out = append(out, s.first)
	}
	if s.more != nil {
		out = append(out, s.more.rest...)
	}
	return out
}
