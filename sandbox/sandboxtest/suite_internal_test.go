package sandboxtest

import "testing"

// The memory-bound test is only as good as its sampler: it must see a
// large allocation that is live while it samples.
func TestHeapSampler_SeesAllocation(t *testing.T) {
	before := heapNow()
	h := startHeapSampler()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	peak := h.Peak()
	if buf[len(buf)-1] != byte(len(buf)-1) {
		t.Fatal("buffer lost")
	}
	if peak < before+60<<20 {
		t.Errorf("peak %d KiB, before %d KiB: the sampler missed a 64 MiB allocation", peak>>10, before>>10)
	}
}
