package codec

import "testing"

// Exported for the tests of package codec_test.

type NamedValue = namedValue

func NewNamedValue(name string, value any) NamedValue { return namedValue{name, value} }

func CheckGolden(t *testing.T, file string, r *Registry, values []NamedValue) {
	t.Helper()
	checkGolden(t, file, r, values)
}

func (v NamedValue) Name() string { return v.name }

func (v NamedValue) Value() any { return v.value }
