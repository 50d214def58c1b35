package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/signkey"
)

// witnessStateFile is the state file's name next to the witness key when
// --state is not given.
const witnessStateFile = "witness-state.json"

type witnessView struct {
	Cosigned []eventlog.TreeHead `json:"cosigned"`
	Head     eventlog.TreeHead   `json:"head"`
}

func newWitnessCmd(a *app) *cobra.Command {
	var store, keyFile, logKey, state string
	var once bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "witness --store DSN|DIR --key FILE --log-key FILE",
		Short: "Cosign the log's checkpoints after checking that each extends the last one cosigned; refuse a fork or a rollback",
		Long: `witness is a log's second pair of eyes, run by someone other than its
operator, with a key of its own (rath keys generate). It reads the
checkpoints of the store (--store: a postgres:// DSN, a runtime directory
or its rath.db) signed by the log's key (--log-key: its verifier.vkey
file), and for each one newer than the last it cosigned checks the log's
consistency proof from that one (the new tree must extend the old), then
adds its cosignature to the store. What it cosigned last it keeps in its
own state file (--state, default witness-state.json next to --key),
outside the store: a history rewritten afterwards, even one re-signed
with the log's own key, no longer extends it, and the witness refuses it
(exit code 3, naming both sizes and roots). Its first run trusts the
checkpoint it finds. --once (the default) checks once; --interval D
checks every D until interrupted.`,
		Example: "rath witness --store postgres://audit@db/rath --key ./witness/signer.key --log-key ./log.vkey --interval 30s",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if store == "" || keyFile == "" || logKey == "" {
				return usagef(cmd, "--store, --key and --log-key are required")
			}
			if once && interval > 0 {
				return usagef(cmd, "--once and --interval exclude each other")
			}
			if interval < 0 {
				return usagef(cmd, "--interval must be positive")
			}
			key, err := signkey.Load(keyFile)
			if err != nil {
				return err
			}
			vkey, err := readVerifierKey(logKey)
			if err != nil {
				return usagef(cmd, "--log-key: %v", err)
			}
			if state == "" {
				state = filepath.Join(filepath.Dir(keyFile), witnessStateFile)
			}
			ctx := cmd.Context()
			s, err := openWitnessStore(ctx, store)
			if err != nil {
				return err
			}
			defer s.Close()
			w := &checkpoint.Witness{Key: key, LogKey: vkey, StatePath: state}
			for {
				res, err := w.Step(ctx, s)
				if err != nil {
					return err
				}
				if err := a.printWitness(res); err != nil {
					return err
				}
				if interval == 0 {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "the log's store: a postgres:// DSN, a runtime directory or a rath.db file")
	cmd.Flags().StringVar(&keyFile, "key", "", "the witness's signer key file (rath keys generate)")
	cmd.Flags().StringVar(&logKey, "log-key", "", "the log's verifier key: a verifier.vkey file (or the key text)")
	cmd.Flags().StringVar(&state, "state", "", "the witness's state file (default witness-state.json next to --key)")
	cmd.Flags().BoolVar(&once, "once", false, "check once and exit (the default)")
	cmd.Flags().DurationVar(&interval, "interval", 0, "check every D until interrupted")
	jsonFlag(cmd, a)
	return cmd
}

func (a *app) printWitness(res checkpoint.StepResult) error {
	if a.json {
		v := witnessView{Cosigned: res.Cosigned, Head: res.Head}
		if v.Cosigned == nil {
			v.Cosigned = []eventlog.TreeHead{}
		}
		return a.printJSON(v)
	}
	for _, h := range res.Cosigned {
		fmt.Fprintf(a.stdout, "cosigned size %d root %s\n", h.Size, h.Root)
	}
	if len(res.Cosigned) == 0 {
		if res.Head.Size == 0 {
			fmt.Fprintln(a.stdout, "no checkpoint signed by the log key yet")
		} else {
			fmt.Fprintf(a.stdout, "nothing new: last cosigned size %d root %s\n", res.Head.Size, res.Head.Root)
		}
	}
	return nil
}

// readVerifierKey reads a note verifier key from a file, or takes the
// text itself when it is one.
func readVerifierKey(arg string) (string, error) {
	if _, _, err := signkey.ParseVerifierKey(arg); err == nil {
		return strings.TrimSpace(arg), nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return "", err
	}
	vkey := strings.TrimSpace(string(b))
	if _, _, err := signkey.ParseVerifierKey(vkey); err != nil {
		return "", fmt.Errorf("%s: %w", arg, err)
	}
	return vkey, nil
}

// readVerifierKeys reads each of args with readVerifierKey.
func readVerifierKeys(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, arg := range args {
		vkey, err := readVerifierKey(arg)
		if err != nil {
			return nil, err
		}
		out = append(out, vkey)
	}
	return out, nil
}

// pinKeys reads the --log-key and --witness-key arguments into the keys
// the store's checkpoints are verified against.
func (a *app) pinKeys(logKeys, witnessKeys []string) error {
	var err error
	if a.trustedKeys, err = readVerifierKeys(logKeys); err != nil {
		return fmt.Errorf("--log-key: %w", err)
	}
	if a.trustedWitnesses, err = readVerifierKeys(witnessKeys); err != nil {
		return fmt.Errorf("--witness-key: %w", err)
	}
	return nil
}

// openWitnessStore opens the log of target without migrating it: a
// witness reads someone else's store and never changes its schema.
func openWitnessStore(ctx context.Context, target string) (*eventlog.Store, error) {
	opts := eventlog.Options{}
	switch {
	case eventlog.IsPostgresDSN(target):
		opts.DSN = target
	default:
		path := target
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err)
		}
		if st.IsDir() {
			path = filepath.Join(path, rath.DBFile)
			if _, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("--store: no rath store in %s: %w", target, err)
			}
		}
		opts.Path = path
	}
	s, err := eventlog.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	if _, err := checkpoint.Origin(ctx, s); err != nil {
		s.Close()
		if errors.Is(err, checkpoint.ErrNoStoreID) {
			return nil, fmt.Errorf("--store: the store has no checkpoints table yet (its schema predates them: rath migrate): %w", err)
		}
		return nil, err
	}
	return s, nil
}
