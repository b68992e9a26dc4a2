// Package fuzzdrive runs a fuzz target's property in the ordinary test run.
//
// `go test` runs a fuzz target on its seed corpus only; the engine that
// mutates inputs runs only under `go test -fuzz`, one target at a time. Run
// gives each target a second, plain test that feeds the same property
// inputs made by mutating the seeds with a math/rand source, for two
// seconds by default, so every default run explores beyond the seeds; Fuzz
// makes the fuzz target of the same property and seeds.
//
// Callers must know:
//  1. REGENT_FUZZ_SECONDS sets how long each driver runs (a decimal number
//     of seconds; 0 skips the drivers); REGENT_FUZZ_SEED fixes the source's
//     seed. A failure reports the seed and the input, so it can be replayed
//     and added to the target's seeds.
//  2. The property must be deterministic for a given input and must not
//     call t.Fatal: it returns an error instead. A panic is reported as a
//     failure with the input that caused it.
//  3. The mutations are blind (no coverage guidance): the driver finds
//     shallow faults cheaply; run `go test -fuzz` for deep ones.
package fuzzdrive
