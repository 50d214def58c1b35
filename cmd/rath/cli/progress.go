package cli

import (
	"fmt"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// progress returns a callback that draws a progress bar named desc on
// stderr, or nil when stderr is not a terminal: a bar redraws with \r and
// block glyphs, which must never reach a redirected log. The bar is made
// at the first call, when the total is known, and follows a total that
// changes. Drawing errors are ignored: they must not fail the job.
func (a *app) progress(desc string) func(done, total int64) {
	if !isTerminal(a.stderr) {
		return nil
	}
	var mu sync.Mutex
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if total <= 0 {
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(a.stderr),
				progressbar.OptionSetDescription(desc),
				progressbar.OptionShowCount(),
				progressbar.OptionSetWidth(30),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(a.stderr) }))
		}
		if total != bar.GetMax64() {
			bar.ChangeMax64(total)
		}
		_ = bar.Set64(min(done, total))
	}
}
