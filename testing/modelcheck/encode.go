package modelcheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/internal/election"
)

// Messages are encoded and printed by reflection, field by field, so that a
// field added to a protocol message (a view's epoch, say) takes part in the
// state key and in traces without a change here.

func (e *envelope) appendKey(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(e.from))
	b = binary.AppendVarint(b, e.fromPID.Creation)
	b = binary.AppendUvarint(b, uint64(e.to))
	b = appendValue(b, reflect.ValueOf(e.out.To))
	b = appendValue(b, reflect.ValueOf(e.out.ToName))
	return appendValue(b, reflect.ValueOf(e.out.Message))
}

// appendValue appends a canonical encoding of v, its type included. It
// reads unexported fields too, which the exact keys of the tests use to
// encode a whole core.
func appendValue(b []byte, v reflect.Value) []byte {
	if !v.IsValid() {
		return append(b, 0)
	}
	b = appendString(b, v.Type().String())
	if v.Type() == timeType {
		// Its wall and ext words; its Location is the same everywhere here.
		return binary.AppendVarint(binary.AppendUvarint(b, v.Field(0).Uint()), v.Field(1).Int())
	}
	switch v.Kind() {
	case reflect.Bool:
		b = appendBools(b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b = binary.AppendVarint(b, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b = binary.AppendUvarint(b, v.Uint())
	case reflect.Float32, reflect.Float64:
		b = binary.AppendUvarint(b, math.Float64bits(v.Float()))
	case reflect.String:
		b = appendString(b, v.String())
	case reflect.Struct:
		for i := range v.NumField() {
			b = appendValue(b, v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		for i := range v.Len() {
			b = appendValue(b, v.Index(i))
		}
	case reflect.Map:
		entries := make([][]byte, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			entries = append(entries, appendValue(appendValue(nil, it.Key()), it.Value()))
		}
		slices.SortFunc(entries, bytes.Compare)
		b = binary.AppendUvarint(b, uint64(len(entries)))
		for _, e := range entries {
			b = append(b, e...)
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, 0)
		}
		b = appendValue(append(b, 1), v.Elem())
	case reflect.Func:
		// Functions (Config.Prefer.Less) are fixed for a run.
	default:
		panic(fmt.Sprintf("modelcheck: cannot encode a %s", v.Type()))
	}
	return b
}

var timeType = reflect.TypeFor[time.Time]()

// describeMessage prints a message as "RequestVote{Term:1 View:t1e1+@1n1
// PreVote}": its type without the Message prefix, the header's term and
// view stamp, and its other set fields, members by short name, views as
// describeView does. Send stamps and their echoes (Sent, Echo) are left
// out: readings of a member's clock, which the action's time says.
func describeMessage(msg any) string {
	v := reflect.ValueOf(msg)
	typ := strings.TrimPrefix(v.Type().Name(), "Message")
	if v.Kind() != reflect.Struct {
		return fmt.Sprintf("%s(%v)", typ, msg)
	}
	var fields []string
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if !f.IsExported() || fv.IsZero() || f.Name == "Sent" || f.Name == "Echo" {
			continue
		}
		switch x := fv.Interface().(type) {
		case election.Header:
			fields = append(fields, fmt.Sprintf("Term:%d", x.Term))
			if !x.View.IsZero() {
				fields = append(fields, "View:"+describeStamp(x.View))
			}
		case gen.ProcessID:
			fields = append(fields, f.Name+":"+short(x.Node))
		case []gen.ProcessID:
			fields = append(fields, f.Name+":"+describeMembers(x))
		case []gen.Atom:
			names := make([]string, len(x))
			for k, n := range x {
				names[k] = short(n)
			}
			fields = append(fields, f.Name+":"+strings.Join(names, ","))
		case *election.View:
			fields = append(fields, f.Name+":"+describeView(x))
		case election.ViewKey:
			fields = append(fields, fmt.Sprintf("%s:t%de%d", f.Name, x.Term, x.Epoch))
		case gen.PID:
			fields = append(fields, f.Name+":"+describePID(x))
		case bool:
			fields = append(fields, f.Name)
		default:
			fields = append(fields, fmt.Sprintf("%s:%v", f.Name, x))
		}
	}
	return typ + "{" + strings.Join(fields, " ") + "}"
}

// describeStamp is "t2e1+@1n1": key term 2, epoch 1, agreed (+, or ? when
// not), of the lineage n1 formed at term 1.
func describeStamp(s election.ViewStamp) string {
	agreed := "?"
	if s.Agreed {
		agreed = "+"
	}
	return fmt.Sprintf("t%de%d%s@%d%s", s.Key.Term, s.Key.Epoch, agreed, s.Lineage.Term, short(s.Lineage.Node))
}

// describeView is "{n1,n2,n3}t2e1+@1n1", or "none".
func describeView(v *election.View) string {
	if v == nil {
		return "none"
	}
	return describeMembers(v.Members) + describeStamp(v.Stamp)
}

func describeMembers(ms []gen.ProcessID) string {
	names := make([]string, len(ms))
	for k, m := range ms {
		names[k] = short(m.Node)
	}
	return "{" + strings.Join(names, ",") + "}"
}

// short is a node's name without its host: "n1" for "n1@mc".
func short(n gen.Atom) string {
	s, _, _ := strings.Cut(string(n), "@")
	return s
}

// describePID is "n1#2" for life 2 of member n1.
func describePID(p gen.PID) string { return fmt.Sprintf("%s#%d", short(p.Node), p.Creation) }
