// Package codec is the compact binary encoding of the values nodes send each
// other: builtins, gen's value types and messages, errors, and the types the
// user registers.
//
// A Registry knows which Go types may cross the wire. Every encoded value
// starts with its type: one tag byte for a builtin (nil, bool, the integer and
// float kinds, string, []byte, []string, map[string]string, []any, errors,
// gen.Atom, gen.PID, gen.ProcessID, gen.Ref and gen's Down and Exit messages),
// or a marker byte, a uvarint length and the wire name (package path + "." +
// type name) for a registered type. The value follows, field by field in
// declaration order: integers as (zig-zag) varints, floats as fixed-size
// big-endian IEEE 754 bits, strings as a uvarint length and bytes, slices and
// maps as a uvarint of 0 for nil or 1 + the length followed by the elements,
// pointers as a 0 (nil) or 1 byte followed by the pointee, and interface
// fields as a nested typed value. Errors of unregistered types travel as their
// text plus the texts of any registered sentinels they wrap; a registered
// sentinel (gen's are pre-registered) travels as its text and decodes to the
// very same value, so errors.Is works across nodes.
//
// Per-type encoders and decoders are built once, at registration, from
// reflection, but run without it: each kind has its own function that loads
// or stores the value through an unsafe.Pointer, and a struct is compiled
// into a flat list of field operations at offsets taken from
// reflect.StructField.Offset (the fields of structs it holds by value spliced
// in), with the commonest scalars handled inline. Reflection remains for
// maps, interface types with methods and allocating slices of a type known
// only at run time.
//
// Why not encoding/gob: gob's own documentation says it is not hardened
// against adversarial input, and a single bad frame from a buggy peer must
// cost the connection at most, never the node. This decoder never panics on
// any input, refuses any length prefix larger than the bytes that remain
// before allocating for it (so memory stays within a small constant multiple
// of the input size: about 16 bytes per input byte at worst, for a dense
// slice of nil interface values), and refuses nesting deeper than MaxDepth. Its output is also
// smaller than gob's, which sends type descriptions on every stream.
//
// Callers must know:
//  1. Both nodes must register the same types, with identical definitions:
//     fields are matched by position, not by name, and nothing on the wire
//     describes them. Register every type before the first message uses it.
//  2. A Decode error wrapping ErrUnknownType means the frame named a type this
//     node lacks: drop the frame and keep the connection. An error wrapping
//     gen.ErrMalformed means the peer sent garbage: close the connection.
//  3. Only exported fields are encoded, and a struct with unexported fields
//     cannot be registered. Channels, functions and complex numbers are not
//     supported. Slices and maps whose elements encode to no bytes (such as
//     []struct{}) are refused at registration, because a decoder could not
//     bound their length.
//  4. Pointers are followed, not shared: two pointers to one value arrive as
//     two copies, and a cyclic structure fails to encode (gen.ErrTooLarge).
//  5. Unregistered errors arrive as new values with the same Error() text;
//     only registered sentinels keep their identity, and the text is their
//     wire identity, so it must be the same on every node.
package codec
