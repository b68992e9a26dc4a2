package node

// smallSet is a set that keeps its first few elements in a slice and moves
// to a map only when it grows past smallSetMax. Most relations sets hold one
// to four watchers (a member's monitors of its peers), where a map costs
// several hundred bytes and a slice a few dozen; a target watched by
// thousands still removes in constant time.
type smallSet[T comparable] struct {
	few  []T
	many map[T]struct{} // non-nil once the set outgrew few
}

// smallSetMax is the most elements kept in the slice.
const smallSetMax = 8

// add inserts v and reports whether it was new.
func (s *smallSet[T]) add(v T) bool {
	if s.many != nil {
		if _, ok := s.many[v]; ok {
			return false
		}
		s.many[v] = struct{}{}
		return true
	}
	for _, x := range s.few {
		if x == v {
			return false
		}
	}
	if len(s.few) < smallSetMax {
		s.few = append(s.few, v)
		return true
	}
	s.many = make(map[T]struct{}, 2*smallSetMax)
	for _, x := range s.few {
		s.many[x] = struct{}{}
	}
	s.many[v] = struct{}{}
	s.few = nil
	return true
}

// remove deletes v and reports whether it was there.
func (s *smallSet[T]) remove(v T) bool {
	if s.many != nil {
		if _, ok := s.many[v]; !ok {
			return false
		}
		delete(s.many, v)
		return true
	}
	for i, x := range s.few {
		if x == v {
			last := len(s.few) - 1
			s.few[i] = s.few[last]
			var zero T
			s.few[last] = zero
			s.few = s.few[:last]
			return true
		}
	}
	return false
}

// has reports whether v is in the set.
func (s *smallSet[T]) has(v T) bool {
	if s.many != nil {
		_, ok := s.many[v]
		return ok
	}
	for _, x := range s.few {
		if x == v {
			return true
		}
	}
	return false
}

// len is the number of elements.
func (s *smallSet[T]) len() int {
	if s.many != nil {
		return len(s.many)
	}
	return len(s.few)
}

// appendTo appends the elements to out, in no particular order.
func (s *smallSet[T]) appendTo(out []T) []T {
	if s.many != nil {
		for v := range s.many {
			out = append(out, v)
		}
		return out
	}
	return append(out, s.few...)
}
