package node

import (
	"fmt"

	"github.com/regent-go/regent/node/internal/codec"
)

// registry is the codec registry behind Network's Register* methods; a node
// without network keeps one too, so they answer the same there.
type registry struct{ reg *codec.Registry }

func (d registry) RegisterTypes(types []any) error {
	for _, t := range types {
		if err := d.reg.RegisterType(t); err != nil {
			return fmt.Errorf("register type %T: %w", t, err)
		}
	}
	return nil
}

// IsRegistered encodes v into a pooled scratch buffer: every election member
// checks its wire types at spawn, and buffers of their own would be a dozen
// pieces of garbage per member among the ones it keeps.
func (d registry) IsRegistered(v any) bool {
	s := getScratch()
	defer putScratch(s)
	b, err := d.reg.Encode(s.b[:0], v)
	s.b = b
	return err == nil
}

func (d registry) RegisterErrors(errs []error) error {
	for _, e := range errs {
		if err := d.reg.RegisterError(e); err != nil {
			return fmt.Errorf("register error %q: %w", e, err)
		}
	}
	return nil
}
