package projections_test

import (
	"testing"

	"github.com/gorath/rath/internal/pgtest"
)

// server is the PostgreSQL the tests that run on both stores use.
var server *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { server = s }) }
