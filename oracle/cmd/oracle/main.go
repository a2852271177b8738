// Command oracle runs the real Volcano (the release go.mod pins) on
// volcanolib's inputs and prints volcanolib's JSON shapes, so the two can be
// compared decision by decision. Run it through tools/oracle.
//
//	oracle simulate [--conf FILE] [--sessions N] [--runs K] [--per-session] FILE... [--json]
//	oracle simulate --each [flags] FILE...     one scenario per file, one JSON line each
//	oracle jobs FILE...                        drive Volcano's job controller through event sequences
//	oracle has NAME...                         which names are Volcano plugins or actions (JSON)
//	oracle version
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"volcanolib/oracle/internal/controllers"
	"volcanolib/oracle/internal/jobsim"
	"volcanolib/oracle/internal/scenario"
	"volcanolib/oracle/internal/schedsim"
)

const usage = `usage: oracle simulate [--conf FILE] [--sessions N] [--runs K] [--per-session] [--each] FILE... [--json]
       oracle jobs FILE...
       oracle has NAME...
       oracle version

simulate runs Volcano's scheduler (cache, session, actions, plugins) on a
scenario or cluster dump, as volcanolib simulate reads it, and prints the
result as volcanolib simulate --json prints it. Output is always JSON.

  --conf FILE     volcano-scheduler.conf to use instead of the scenario's
  --sessions N    how many sessions to run (default: the scenario's, or 1)
  --runs K        run K times; when K > 1, print each distinct outcome with
                  how often it came, and the facts that held in every run
  --per-session   add "perSession": each session's binds, evictions,
                  pipelined pods and the PodGroup status it wrote
  --timings       add "timings": seconds to load the files, to feed the
                  cache, and in the sessions (the first run's)
  --each          treat every FILE as its own scenario; print one JSON line
                  per file: {"file": F, "result": R} or {"file": F, "error": E}

jobs runs Volcano's job controller through each event sequence FILE (a Job,
then what happens to it step by step: docs/job-sequences.md) and prints one
JSON line per file: {"file": F, "records": [R...]} with a record of the Job,
its PodGroup and its pods after each step, or {"file": F, "error": E}.
Exit status 2 when a file could not be read or its Job was refused.
`

func main() {
	// Some of Volcano's code prints to standard output: ours is a copy of it,
	// and what Volcano prints goes to standard error.
	out, err := syscall.Dup(1)
	if err == nil && syscall.Dup2(2, 1) == nil {
		os.Exit(run(os.Args[1:], os.NewFile(uintptr(out), "stdout"), os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version":
		fmt.Fprintln(stdout, volcanoVersion())
		return 0
	case "simulate":
		return simulate(args[1:], stdout, stderr)
	case "jobs":
		if len(args) < 2 {
			fmt.Fprintf(stderr, "oracle jobs: no sequence file given\n")
			return 2
		}
		jobsim.Main(args[1:], stdout, stderr) // ends the process
		return 1
	case "has":
		// oracle has NAME...: which names are plugins and which actions of this Volcano.
		if err := json.NewEncoder(stdout).Encode(schedsim.Known(args[1:])); err != nil {
			return 1
		}
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "oracle: unknown command %q\n%s", args[0], usage)
	return 2
}

// volcanoVersion is the Volcano module this binary was built with.
func volcanoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "volcano.sh/volcano" {
				return "volcano.sh/volcano " + dep.Version
			}
		}
	}
	return "volcano.sh/volcano (unknown version)"
}

func simulate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	confPath := fs.String("conf", "", "")
	sessions := fs.Int("sessions", 0, "")
	runs := fs.Int("runs", 1, "")
	perSession := fs.Bool("per-session", false, "")
	each := fs.Bool("each", false, "")
	timings := fs.Bool("timings", false, "")
	fs.Bool("json", true, "")
	// Not in the usage: a Go CPU profile of the whole run, for work on the oracle's speed.
	cpuProfile := fs.String("cpuprofile", "", "")
	// Flags may follow the files, as with volcanolib.
	var files []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			fmt.Fprintf(stderr, "oracle simulate: %v\n", err)
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "oracle simulate: no scenario file given\n")
		return 2
	}
	if *runs < 1 || *sessions < 0 {
		fmt.Fprintf(stderr, "oracle simulate: --runs must be at least 1 and --sessions positive\n")
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "oracle simulate: --cpuprofile: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "oracle simulate: --cpuprofile: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if os.Getenv("GOGC") == "" {
		// A run's garbage is most of what it allocates and the live heap stays small: collecting
		// less often saves a third of the time of a small scenario.
		debug.SetGCPercent(400)
	}
	opts := options{conf: *confPath, sessions: *sessions, runs: *runs, perSession: *perSession, timings: *timings}
	enc := json.NewEncoder(stdout)
	if *each {
		for _, file := range files {
			out, err := simulateOne([]string{file}, opts)
			line := map[string]any{"file": file}
			if err != nil {
				line["error"] = err.Error()
			} else {
				line["result"] = out
			}
			if err := enc.Encode(line); err != nil {
				return 1
			}
		}
		return 0
	}
	out, err := simulateOne(files, opts)
	if err != nil {
		fmt.Fprintf(stderr, "oracle: %v\n", err)
		var internal *internalError
		if errors.As(err, &internal) {
			return 1
		}
		return 2
	}
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return 1
	}
	return 0
}

// nowFunc is the wall clock the scenario's clock is pinned to.
var nowFunc = time.Now

type options struct {
	conf       string
	sessions   int
	runs       int
	perSession bool
	timings    bool
}

// internalError is a failure of the oracle itself, not of its input.
type internalError struct{ err error }

func (e *internalError) Error() string { return e.err.Error() }

func simulateOne(files []string, opts options) (any, error) {
	var outcomes []outcome
	for i := 0; i < opts.runs; i++ {
		loading := time.Now()
		scn, err := scenario.Load(files, opts.conf, opts.sessions)
		if err != nil {
			return nil, err
		}
		scn.Normalize()
		if err := controllers.Prepare(scn); err != nil {
			var refusedErr *controllers.RefusedError
			if errors.As(err, &refusedErr) {
				return nil, fmt.Errorf("%s: %v", strings.Join(files, ", "), err)
			}
			return nil, &internalError{err}
		}
		scn.Normalize()
		scn.ShiftTimes(nowFunc())
		loadSeconds := time.Since(loading).Seconds()
		result, err := schedsim.Run(scn, opts.perSession)
		if err != nil {
			var confErr *schedsim.ConfigError
			if errors.As(err, &confErr) {
				return nil, fmt.Errorf("%s: %v", strings.Join(files, ", "), err)
			}
			return nil, &internalError{err}
		}
		timings := result.Timings
		result.Timings = nil
		data, err := json.Marshal(result)
		if err != nil {
			return nil, &internalError{err}
		}
		found := false
		for j := range outcomes {
			if outcomes[j].key == string(data) {
				outcomes[j].Count++
				found = true
				break
			}
		}
		if !found {
			outcomes = append(outcomes, outcome{key: string(data), Count: 1, Result: result})
		}
		if opts.timings && i == 0 {
			timings["load"] = loadSeconds
			outcomes[0].Result.Timings = timings
		}
	}
	if opts.runs == 1 {
		return outcomes[0].Result, nil
	}
	sort.SliceStable(outcomes, func(i, j int) bool { return outcomes[i].Count > outcomes[j].Count })
	return map[string]any{"runs": opts.runs, "outcomes": outcomes, "always": always(outcomes)}, nil
}

type outcome struct {
	key    string
	Count  int              `json:"count"`
	Result *schedsim.Result `json:"result"`
}

// always is the part of the result that held in every run: binds to the
// same node, evictions, pipelined pods on the same node, and PodGroup phases.
func always(outcomes []outcome) map[string]any {
	first := outcomes[0].Result
	binds := map[string]string{}
	for pod, node := range first.Binds {
		same := true
		for _, o := range outcomes[1:] {
			if o.Result.Binds[pod] != node {
				same = false
				break
			}
		}
		if same {
			binds[pod] = node
		}
	}
	evictions := []string{}
	for _, pod := range first.Evictions {
		same := true
		for _, o := range outcomes[1:] {
			if !contains(o.Result.Evictions, pod) {
				same = false
				break
			}
		}
		if same {
			evictions = append(evictions, pod)
		}
	}
	pipelined := map[string]string{}
	for pod, node := range first.Pipelined {
		same := true
		for _, o := range outcomes[1:] {
			if o.Result.Pipelined[pod] != node {
				same = false
				break
			}
		}
		if same {
			pipelined[pod] = node
		}
	}
	phases := map[string]string{}
	for pg, report := range first.PodGroups {
		same := true
		for _, o := range outcomes[1:] {
			if o.Result.PodGroups[pg].Phase != report.Phase {
				same = false
				break
			}
		}
		if same {
			phases[pg] = report.Phase
		}
	}
	return map[string]any{"binds": binds, "evictions": evictions, "pipelined": pipelined, "podGroupPhases": phases}
}

func contains(list []string, item string) bool {
	for _, x := range list {
		if x == item {
			return true
		}
	}
	return false
}
