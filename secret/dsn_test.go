package secret_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gorath/rath/secret"
)

func TestFromDSN(t *testing.T) {
	tests := []struct {
		name, dsn string
		want      []string // the values, in order
	}{
		{"url", "postgres://rath:s3cret-pw@db:5432/rath", []string{"rath:s3cret-pw@", "s3cret-pw"}},
		{"escaped", "postgres://rath:p%40ss%2Fw0rd@db/rath", []string{"rath:p%40ss%2Fw0rd@", "p%40ss%2Fw0rd", "p@ss/w0rd"}},
		{"raw at sign", "postgresql://rath:p@ss@db/rath", []string{"rath:p@ss@", "p@ss"}},
		{"short", "postgres://postgres:pw@127.0.0.1:5432/x", []string{"postgres:pw@", "pw"}},
		{"password is the user", "postgres://postgres:postgres@db/postgres", []string{"postgres:postgres@"}},
		{"no password", "postgres://rath@db/rath", nil},
		{"empty password", "postgres://rath:@db/rath", nil},
		{"http base url", "https://user:tok-123456@api.example/v1", []string{"user:tok-123456@", "tok-123456"}},
		{"keywords", "host=db user=rath password=s3cret-pw dbname=rath", []string{"s3cret-pw"}},
		{"quoted keyword", `host=db password = 'it\'s a secret' port=5432`, []string{"it's a secret"}},
		{"not a keyword", "oldpassword=x host=db", nil},
		{"plain text", "/usr/bin:/bin", nil},
		{"no scheme", "rath:pw@db", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range secret.FromDSN("RATH_DSN", tt.dsn) {
				if s.Name != "RATH_DSN.password" {
					t.Fatalf("name %q", s.Name)
				}
				got = append(got, s.Value)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("FromDSN = %q, want %q", got, tt.want)
			}
		})
	}
}

// A password in a connection string in the environment is redacted even
// where the variable's name says nothing, and even when short.
func TestFromEnviron_DSNPassword(t *testing.T) {
	r := secret.New(secret.FromEnviron([]string{"RATH_DSN=postgres://rath:pw@db/rath", "DATABASE_URL=postgres://app:longer-secret@db/app", "PATH=/bin"})...)
	in := "RATH_DSN=postgres://rath:pw@db/rath\nDATABASE_URL=postgres://app:longer-secret@db/app\nsaid longer-secret"
	want := "RATH_DSN=postgres://[redacted:RATH_DSN.password]db/rath\nDATABASE_URL=postgres://[redacted:DATABASE_URL.password]db/app\nsaid [redacted:DATABASE_URL.password]"
	if got := r.String(in); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func ExampleFromDSN() {
	for _, s := range secret.FromDSN("RATH_DSN", "postgres://rath:s3cret-pw@db.internal:5432/rath") {
		fmt.Println(s.Name, s.Value)
	}
	// Output:
	// RATH_DSN.password rath:s3cret-pw@
	// RATH_DSN.password s3cret-pw
}
