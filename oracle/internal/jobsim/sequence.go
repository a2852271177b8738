// Package jobsim drives Volcano's own job controller, in-process on fake
// clients, through an event sequence: a Job, then what the scheduler, the
// kubelet and the user do to it step by step (docs/job-sequences.md). After
// each step it records what the controller made of it, in the shape
// volcanolib's test driver records for volcanolib's job controller, so the
// two can be compared step by step.
package jobsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Step kinds, as the sequence file names them.
const (
	StepPodGroup  = "podGroup"
	StepRunning   = "running"
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
	StepEvict     = "evict"
	StepWait      = "wait"
	StepCommand   = "command"
)

var stepKinds = []string{StepPodGroup, StepRunning, StepSucceeded, StepFailed, StepEvict, StepWait, StepCommand}

// podGroupPhases are the phases a podGroup step may set.
var podGroupPhases = []string{"Pending", "Inqueue", "Running", "Unknown", "Completed"}

// commandActions are the actions a command step may carry (what vcctl sends).
var commandActions = []string{"AbortJob", "RestartJob", "TerminateJob", "CompleteJob", "ResumeJob", "SyncJob"}

// Sequence is one event sequence file.
type Sequence struct {
	File   string
	Job    *batchv1alpha1.Job
	Queues []*schedv1beta1.Queue
	Steps  []Step
	// SucceededReady makes a Succeeded pod's container report Ready, which no kubelet
	// does; Volcano v1.14.1's dependsOn then counts the pod, as v1.15 counts every
	// Succeeded pod (docs/differences.md).
	SucceededReady bool
}

// Step is one thing that happens to the Job from outside its controller.
type Step struct {
	Kind string
	// Pods names the pods of running, succeeded, failed and evict: a name, or a prefix ending in "*".
	Pods []string
	// ExitCode is the exit code of a failed step's pods.
	ExitCode int32
	// Phase is the PodGroup phase of a podGroup step.
	Phase string
	// Wait is how long a wait step lets pass.
	Wait time.Duration
	// Action is the action of a command step.
	Action string
}

// DefaultExitCode is the exit code of a failed step that names none.
const DefaultExitCode = 1

// Load reads an event sequence file.
func Load(path string) (*Sequence, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	seq, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	seq.File = path
	return seq, nil
}

// Parse reads an event sequence from YAML (or JSON) text.
func Parse(data []byte) (*Sequence, error) {
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %v", err)
	}
	var doc struct {
		Job            json.RawMessage   `json:"job"`
		Queues         []json.RawMessage `json:"queues"`
		Steps          []json.RawMessage `json:"steps"`
		SucceededReady bool              `json:"succeededReady"`
		// What the tests expect after some steps: read by the tests, not here.
		Expect  json.RawMessage `json:"expect"`
		Volcano json.RawMessage `json:"volcano"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("expected a mapping of job, queues, steps, succeededReady, expect and volcano: %v", err)
	}
	if len(doc.Job) == 0 || string(doc.Job) == "null" {
		return nil, fmt.Errorf("job: missing (a batch.volcano.sh/v1alpha1 Job manifest)")
	}
	seq := &Sequence{Job: &batchv1alpha1.Job{}, SucceededReady: doc.SucceededReady}
	if err := json.Unmarshal(doc.Job, seq.Job); err != nil {
		return nil, fmt.Errorf("job: %v", err)
	}
	if seq.Job.Kind != "Job" || seq.Job.APIVersion != batchv1alpha1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("job: expected kind Job of %s, got %q of %q", batchv1alpha1.SchemeGroupVersion, seq.Job.Kind, seq.Job.APIVersion)
	}
	if seq.Job.Name == "" {
		return nil, fmt.Errorf("job.metadata.name: missing")
	}
	for i, q := range doc.Queues {
		queue := &schedv1beta1.Queue{}
		if err := json.Unmarshal(q, queue); err != nil {
			return nil, fmt.Errorf("queues[%d]: %v", i, err)
		}
		if queue.Name == "" {
			return nil, fmt.Errorf("queues[%d].metadata.name: missing", i)
		}
		seq.Queues = append(seq.Queues, queue)
	}
	for i, s := range doc.Steps {
		step, err := parseStep(s)
		if err != nil {
			return nil, fmt.Errorf("steps[%d]%v", i, err)
		}
		seq.Steps = append(seq.Steps, step)
	}
	return seq, nil
}

// parseStep reads one step: a mapping with one kind key (and exitCode with failed).
// Its errors start with the field path after "steps[i]".
func parseStep(raw json.RawMessage) (Step, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Step{}, fmt.Errorf(": expected a mapping with one of %s", strings.Join(stepKinds, ", "))
	}
	var kinds []string
	for key := range fields {
		if contains(stepKinds, key) {
			kinds = append(kinds, key)
		} else if key != "exitCode" {
			return Step{}, fmt.Errorf(".%s: unknown field (expected one of %s, and exitCode with failed)", key, strings.Join(stepKinds, ", "))
		}
	}
	if len(kinds) != 1 {
		sort.Strings(kinds)
		return Step{}, fmt.Errorf(": expected exactly one of %s, got %d (%s)", strings.Join(stepKinds, ", "), len(kinds), strings.Join(kinds, ", "))
	}
	step := Step{Kind: kinds[0]}
	value := fields[step.Kind]
	if _, ok := fields["exitCode"]; ok && step.Kind != StepFailed {
		return Step{}, fmt.Errorf(".exitCode: only a failed step has an exit code")
	}
	switch step.Kind {
	case StepPodGroup:
		if err := json.Unmarshal(value, &step.Phase); err != nil || !contains(podGroupPhases, step.Phase) {
			return Step{}, fmt.Errorf(".podGroup: expected one of %s", strings.Join(podGroupPhases, ", "))
		}
	case StepRunning, StepSucceeded, StepFailed, StepEvict:
		pods, err := podList(value)
		if err != nil {
			return Step{}, fmt.Errorf(".%s: %v", step.Kind, err)
		}
		step.Pods = pods
		step.ExitCode = DefaultExitCode
		if code, ok := fields["exitCode"]; ok {
			if err := json.Unmarshal(code, &step.ExitCode); err != nil || step.ExitCode == 0 {
				return Step{}, fmt.Errorf(".exitCode: expected a non-zero integer")
			}
		}
	case StepWait:
		var text string
		if err := json.Unmarshal(value, &text); err != nil {
			return Step{}, fmt.Errorf(".wait: expected a duration such as 30s or 1m30s")
		}
		d, err := time.ParseDuration(text)
		if err != nil || d <= 0 {
			return Step{}, fmt.Errorf(".wait: expected a positive duration such as 30s or 1m30s, got %q", text)
		}
		step.Wait = d
	case StepCommand:
		if err := json.Unmarshal(value, &step.Action); err != nil || !contains(commandActions, step.Action) {
			return Step{}, fmt.Errorf(".command: expected one of %s", strings.Join(commandActions, ", "))
		}
	}
	return step, nil
}

// podList reads a pod name, a prefix ending in "*", or a list of them.
func podList(value json.RawMessage) ([]string, error) {
	var one string
	if err := json.Unmarshal(value, &one); err == nil {
		value, _ = json.Marshal([]string{one})
	}
	var pods []string
	if err := json.Unmarshal(value, &pods); err != nil || len(pods) == 0 {
		return nil, fmt.Errorf("expected a pod name, a prefix ending in *, or a non-empty list of them")
	}
	for _, p := range pods {
		if p == "" || strings.Contains(strings.TrimSuffix(p, "*"), "*") {
			return nil, fmt.Errorf("%q: expected a pod name or a prefix ending in *", p)
		}
	}
	return pods, nil
}

// Resolve names the pods a step's patterns select among the pods that exist:
// names in the order given, each prefix's matches by name; each pod once.
func Resolve(patterns, existing []string) []string {
	sorted := append([]string(nil), existing...)
	sort.Strings(sorted)
	seen := map[string]bool{}
	var out []string
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			for _, name := range sorted {
				if strings.HasPrefix(name, prefix) && !seen[name] {
					seen[name] = true
					out = append(out, name)
				}
			}
		} else if contains(sorted, p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func contains(list []string, item string) bool {
	for _, x := range list {
		if x == item {
			return true
		}
	}
	return false
}
