package jobsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"
	"testing/synctest"

	"volcanolib/oracle/internal/controllers"
)

// Main runs the sequence files and prints one JSON line per file, in order:
// {"file": F, "records": [...]} (with "controllerErrors" when Volcano logged errors)
// or {"file": F, "error": E}. It ends the process: exit status 0, or 2 when a
// file could not be read or Volcano's admission refused its Job.
//
// Volcano's job controller waits real time (policy timeouts) and works in
// goroutines. Run inside a synctest bubble, it waits on the bubble's fake clock,
// which moves only when every goroutine is blocked: a wait step costs no real
// time, and the end of a step is known exactly. The bubble needs a *testing.T,
// so the files are run as the one test of a test main. See order.go for the order
// in which the controller's goroutines see each other's writes.
func Main(files []string, stdout, stderr io.Writer) {
	os.Args = os.Args[:1] // the test main reads its flags from the command line
	// One thread: the goroutines the bubble wakes at one instant (two delayed actions due
	// together) then run one after the other, not side by side.
	runtime.GOMAXPROCS(1)
	testing.Main(
		func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "jobs", F: func(t *testing.T) {
			synctest.Test(t, func(*testing.T) {
				// The bubble's goroutines (informers, workers) never end; leave from inside it.
				os.Exit(runFiles(files, stdout, stderr))
			})
		}}},
		nil, nil,
	)
}

func runFiles(files []string, stdout, stderr io.Writer) int {
	sim, err := New()
	if err != nil {
		fmt.Fprintf(stderr, "oracle jobs: starting Volcano's job controller: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	status := 0
	for _, file := range files {
		line := map[string]any{"file": file}
		seq, err := Load(file)
		var out *Outcome
		if err == nil {
			out, err = sim.Run(seq)
			var refused *controllers.RefusedError
			if err != nil && !errors.As(err, &refused) {
				fmt.Fprintf(stderr, "oracle jobs: %s: %v\n", file, err)
				return 1
			}
			if err != nil {
				err = fmt.Errorf("%s: %v", file, err)
			}
		}
		if err != nil {
			line["error"] = err.Error()
			status = 2
		} else {
			line["records"] = out.Records
			if len(out.Errors) > 0 {
				line["controllerErrors"] = out.Errors
			}
		}
		if err := enc.Encode(line); err != nil {
			return 1
		}
	}
	return status
}
