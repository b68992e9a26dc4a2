//go:build !unix

package mmfcell

import (
	"fmt"
	"os"

	"github.com/regent-go/regent/gen"
)

// lockAndMap refuses: shared mappings and advisory locks are implemented for
// Unix systems only.
func lockAndMap(_ *os.File, path string, _ bool) ([]byte, error) {
	return nil, fmt.Errorf("mmfcell: map %s: %w", path, gen.ErrUnsupported)
}

// munmap is never reached, as nothing is ever mapped here.
func munmap([]byte, string) error { return nil }
