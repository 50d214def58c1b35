package opensandbox

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorath/rath/sandbox"
)

// spec is a parsed placement spec.
type spec struct {
	image    string
	lifetime time.Duration
	id       string // attach to an existing sandbox instead of creating one
	workdir  string
	cpu      string
	memory   string
}

var specKeys = []string{"cpu", "id", "image", "memory", "timeout", "workdir"}

// parseSpec reads a placement spec. Three forms:
//
//	""                                  the backend's defaults
//	"python:3.11"                       an image (no '=')
//	"image=python:3.11&timeout=30m"     query form; keys: image, timeout
//	                                    (sandbox lifetime, a Go duration or
//	                                    seconds), id (attach to an existing
//	                                    sandbox), workdir, cpu, memory
func parseSpec(s string) (spec, error) {
	var sp spec
	if s == "" {
		return sp, nil
	}
	if !strings.Contains(s, "=") {
		sp.image = s
		return sp, nil
	}
	q, err := url.ParseQuery(s)
	if err != nil {
		return sp, fmt.Errorf("%w: %q: %v", sandbox.ErrInvalidSpec, s, err)
	}
	for k, v := range q {
		if !slices.Contains(specKeys, k) {
			return sp, fmt.Errorf("%w: unknown key %q in %q (known: %s)", sandbox.ErrInvalidSpec, k, s, strings.Join(specKeys, ", "))
		}
		if len(v) != 1 || v[0] == "" {
			return sp, fmt.Errorf("%w: key %q needs exactly one non-empty value", sandbox.ErrInvalidSpec, k)
		}
	}
	sp.image, sp.id, sp.cpu, sp.memory = q.Get("image"), q.Get("id"), q.Get("cpu"), q.Get("memory")
	if w := q.Get("workdir"); w != "" {
		if !path.IsAbs(w) {
			return sp, fmt.Errorf("%w: workdir %q is not absolute", sandbox.ErrInvalidSpec, w)
		}
		sp.workdir = path.Clean(w)
	}
	if t := q.Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil {
			secs, err2 := strconv.Atoi(t)
			if err2 != nil {
				return sp, fmt.Errorf("%w: timeout %q is neither a duration nor seconds", sandbox.ErrInvalidSpec, t)
			}
			d = time.Duration(secs) * time.Second
		}
		sp.lifetime = d
	}
	if sp.id != "" && (sp.image != "" || sp.lifetime != 0 || sp.cpu != "" || sp.memory != "") {
		return sp, fmt.Errorf("%w: id attaches to an existing sandbox and cannot be combined with image, timeout, cpu or memory", sandbox.ErrInvalidSpec)
	}
	return sp, nil
}
