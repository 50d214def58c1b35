package secret

import (
	"net/url"
	"strings"
)

// FromDSN returns the password a connection string holds, named
// name+".password": the userinfo of a URL (postgres://user:pw@host/db,
// and any scheme://user:pw@… such as an HTTP base URL), or the password
// keyword of a libpq key=value string (host=db password=pw). A URL's
// password comes as written (percent-escaped, as a process environment
// shows it) and decoded (as a client sends it), and as "user:pw@" too, so
// that a password shorter than MinLen is still redacted where the DSN
// is printed whole. A password that also appears elsewhere in the string
// (postgres://postgres:postgres@…) comes only in that last form:
// redacting the bare word would wipe it from every mention of the host,
// user or database. Text that is neither form has no secret.
func FromDSN(name, dsn string) []Secret {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return nil
	}
	name += ".password"
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.User != nil {
		pw, ok := u.User.Password()
		if !ok || pw == "" {
			return nil
		}
		// The userinfo as written: everything between "//" and the last
		// "@" of the authority.
		_, rest, _ := strings.Cut(dsn, "//")
		at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@")
		if at < 0 {
			return nil
		}
		userinfo := rest[:at]
		_, rawPW, _ := strings.Cut(userinfo, ":")
		out := []Secret{{Name: name, Value: userinfo + "@"}}
		elsewhere := strings.Replace(dsn, userinfo+"@", "", 1)
		for i, v := range []string{rawPW, pw} {
			if (i == 0 || v != rawPW) && !strings.Contains(elsewhere, v) {
				out = append(out, Secret{Name: name, Value: v})
			}
		}
		return out
	}
	return keywordPassword(name, dsn)
}

// keywordPassword finds password=… in a libpq key=value string; a value
// may be single-quoted, with \' and \\ escapes.
func keywordPassword(name, dsn string) []Secret {
	s := dsn
	for {
		i := strings.Index(s, "password")
		if i < 0 {
			return nil
		}
		// A keyword starts the string or follows a space.
		if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' {
			s = s[i+len("password"):]
			continue
		}
		rest := strings.TrimLeft(s[i+len("password"):], " \t")
		if !strings.HasPrefix(rest, "=") {
			s = s[i+len("password"):]
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		var v strings.Builder
		if strings.HasPrefix(rest, "'") {
			for j := 1; j < len(rest) && rest[j] != '\''; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
				}
				v.WriteByte(rest[j])
			}
		} else if f := strings.Fields(rest); len(f) > 0 {
			v.WriteString(f[0])
		}
		if v.Len() == 0 {
			return nil
		}
		return []Secret{{Name: name, Value: v.String()}}
	}
}
