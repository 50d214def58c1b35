package access_test

import (
	"testing"

	"github.com/gorath/rath/internal/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { pg = s }) }
