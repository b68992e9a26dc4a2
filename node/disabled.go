package node

import (
	"fmt"

	"github.com/regent-go/regent/gen"
	"github.com/regent-go/regent/node/internal/codec"
)

// disabledNetwork is the gen.Network of a node started with
// NetworkModeDisabled: it reaches no one, but keeps a registry so that
// RegisterTypes and IsRegistered answer as they would with a network.
type disabledNetwork struct{ registry }

// registry is the codec registry behind Network's Register* methods.
type registry struct{ reg *codec.Registry }

func (d registry) RegisterTypes(types []any) error {
	for _, t := range types {
		if err := d.reg.RegisterType(t); err != nil {
			return fmt.Errorf("register type %T: %w", t, err)
		}
	}
	return nil
}

func (d registry) IsRegistered(v any) bool {
	_, err := d.reg.Encode(nil, v)
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

func (disabledNetwork) AddRoute(node gen.Atom, _ string) error {
	return fmt.Errorf("add route to %s: network disabled: %w", node, gen.ErrNotAllowed)
}
func (disabledNetwork) RemoveRoute(gen.Atom) error { return nil }
func (disabledNetwork) Nodes() []gen.Atom          { return nil }
func (disabledNetwork) Disconnect(node gen.Atom) error {
	return fmt.Errorf("disconnect %s: network disabled: %w", node, gen.ErrNoConnection)
}
func (disabledNetwork) AcceptorAddress() string { return "" }
func (disabledNetwork) Stats() gen.NetworkStats {
	return gen.NetworkStats{Dropped: map[string]uint64{}}
}
