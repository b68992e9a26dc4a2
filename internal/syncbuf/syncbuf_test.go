package syncbuf

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConcurrentWritesAreAllKept(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_, _ = b.Write([]byte("x")) // a bytes.Buffer write cannot fail
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("x", 800), b.String())
}
