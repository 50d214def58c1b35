package flow

import "time"

// SetSleep replaces the provider's backoff sleep, recording the waits
// instead of sleeping, for retry tests.
func SetSleep(p *Provider, fn func(time.Duration)) {
	p.state.sleep = func(d time.Duration, _ <-chan struct{}) bool {
		fn(d)
		return true
	}
}
