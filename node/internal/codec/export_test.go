package codec

import (
	"testing"

	"github.com/regent-go/regent/node/internal/fuzzdrive"
)

// Exported for the tests of package codec_test.

type NamedValue = namedValue

func NewNamedValue(name string, value any) NamedValue { return namedValue{name, value} }

func CheckGolden(t *testing.T, file string, r *Registry, values []NamedValue) {
	t.Helper()
	checkGolden(t, file, r, values)
}

func (v NamedValue) Name() string { return v.name }

func (v NamedValue) Value() any { return v.value }

// DecodesAsDocumented and DecodesWithinBound are the fuzz properties, for
// registries of other packages' types.
func DecodesAsDocumented(r *Registry) fuzzdrive.Property { return decodesAsDocumented(r) }

func DecodesWithinBound(r *Registry) fuzzdrive.Property { return decodesWithinBound(r) }
