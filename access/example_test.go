package access_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/access"
)

// A token is created for a tenant and a role, stands for an identity
// whose role allows reading but not deciding, and once revoked stands
// for no one.
func ExampleLookupToken() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-access-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	plain, tok, err := access.CreateToken(ctx, rt, access.TokenSpec{Tenant: "acme", Role: access.Viewer, By: "os:ann"}, time.Now())
	if err != nil {
		panic(err)
	}
	id, err := access.LookupToken(ctx, rt, plain)
	if err != nil {
		panic(err)
	}
	fmt.Println(id.Tenant, id.Role, id.Via)
	fmt.Println("reads:", id.Allows(access.Read), "decides:", id.Allows(access.Decide))

	if err := access.RevokeToken(ctx, rt, tok.ID, "os:ann"); err != nil {
		panic(err)
	}
	_, err = access.LookupToken(ctx, rt, plain)
	fmt.Println("revoked:", errors.Is(err, access.ErrTokenRevoked))
	// Output:
	// acme viewer token
	// reads: true decides: false
	// revoked: true
}
