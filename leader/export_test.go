package leader

// RareFieldsMade reports whether a made the fields most members never use
// (actorRare): a member of a settled cluster makes none (heap_test.go).
func RareFieldsMade(a *Actor) bool { return a.rare != nil }
