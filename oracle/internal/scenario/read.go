// Package scenario reads what `volcanolib simulate` reads: scenario files
// (a mapping with `objects`), kubectl dumps (one object, a `kind: List`, or
// several YAML documents) in YAML or JSON, and volcano-scheduler.conf text.
//
// The contract is docs/scenario-format.md. This package only reads and
// checks the files; the rules a cluster would apply to the objects (the
// defaults of admission and of the kubelet) are in normalize.go.
package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topov1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"
)

// DefaultSchedulerName is the scheduler a scenario is simulated for when it names none.
const DefaultSchedulerName = "volcano"

// Scenario is a cluster and a scheduler configuration, read from one or more files.
type Scenario struct {
	Name          string
	Sources       []string
	ConfText      string // volcano-scheduler.conf text; empty means the release's default
	SchedulerName string
	Sessions      int

	Nodes           []*v1.Node
	Pods            []*v1.Pod
	PodGroups       []*schedv1beta1.PodGroup
	Queues          []*schedv1beta1.Queue
	PriorityClasses []*schedulingv1.PriorityClass
	HyperNodes      []*topov1alpha1.HyperNode
	Jobs            []*batchv1alpha1.Job

	Warnings []string
}

// InputError is bad input: a file that cannot be read, parsed or understood.
type InputError struct {
	Source string
	Where  string
	Msg    string
}

func (e *InputError) Error() string {
	parts := []string{}
	if e.Source != "" {
		parts = append(parts, e.Source)
	}
	if e.Where != "" {
		parts = append(parts, e.Where)
	}
	parts = append(parts, e.Msg)
	return strings.Join(parts, ": ")
}

func fail(source, where, format string, args ...any) error {
	return &InputError{Source: source, Where: where, Msg: fmt.Sprintf(format, args...)}
}

var scenarioKeys = map[string]bool{
	"name": true, "description": true, "notes": true, "source": true, "scheduler": true,
	"schedulerName": true, "sessions": true, "objects": true, "expect": true,
}

// Load reads files as one scenario, their objects merged in order. confPath,
// when not empty, overrides any `scheduler` block; sessions > 0 overrides `sessions`.
func Load(paths []string, confPath string, sessions int) (*Scenario, error) {
	if len(paths) == 0 {
		return nil, fail("", "", "no scenario file given")
	}
	scn := &Scenario{SchedulerName: DefaultSchedulerName, Sessions: 1}
	var names []string
	confFrom, schedNameFrom, sessionsFrom := "", "", ""
	type pendingObjects struct {
		source string
		field  string
		docs   []map[string]any
	}
	var pending []pendingObjects
	for _, path := range paths {
		source := path
		docs, err := readDocuments(path)
		if err != nil {
			return nil, err
		}
		if len(docs) == 0 {
			return nil, fail(source, "", "no objects passed: the file holds no document")
		}
		if len(docs) == 1 && docs[0]["kind"] == nil {
			data := docs[0]
			if _, ok := data["objects"]; !ok {
				return nil, fail(source, "", "not a scenario (no 'objects' key) nor a Kubernetes object (no 'kind')")
			}
			for key := range data {
				if !scenarioKeys[key] {
					scn.Warnings = append(scn.Warnings, fmt.Sprintf("%s: unknown scenario key %q; ignored", source, key))
				}
			}
			if name, ok := data["name"].(string); ok && name != "" {
				names = append(names, name)
			}
			if block, ok := data["scheduler"]; ok && block != nil {
				if confFrom != "" {
					return nil, fail(source, "scheduler", "a second 'scheduler' block (the first is in %s)", confFrom)
				}
				text, err := confBlockText(block)
				if err != nil {
					return nil, fail(source, "scheduler", "%v", err)
				}
				scn.ConfText, confFrom = text, source
			}
			if raw, ok := data["schedulerName"]; ok && raw != nil {
				name, ok := raw.(string)
				if !ok || name == "" {
					return nil, fail(source, "schedulerName", "expected a scheduler name, got %v", raw)
				}
				if schedNameFrom != "" && name != scn.SchedulerName {
					return nil, fail(source, "schedulerName", "%q differs from %q set in %s", name, scn.SchedulerName, schedNameFrom)
				}
				scn.SchedulerName, schedNameFrom = name, source
			}
			if raw, ok := data["sessions"]; ok && raw != nil {
				n, ok := raw.(float64)
				if !ok || n < 1 || n != float64(int(n)) {
					return nil, fail(source, "sessions", "expected a positive integer, got %v", raw)
				}
				if sessionsFrom != "" && int(n) != scn.Sessions {
					return nil, fail(source, "sessions", "%d differs from %d set in %s", int(n), scn.Sessions, sessionsFrom)
				}
				scn.Sessions, sessionsFrom = int(n), source
			}
			objects := data["objects"]
			if objects == nil {
				objects = []any{}
			}
			list, ok := objects.([]any)
			if !ok {
				return nil, fail(source, "objects", "expected a list of Kubernetes objects")
			}
			var maps []map[string]any
			for i, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, fail(source, fmt.Sprintf("objects[%d]", i), "expected a Kubernetes object (a mapping)")
				}
				maps = append(maps, m)
			}
			pending = append(pending, pendingObjects{source, "objects", maps})
		} else {
			pending = append(pending, pendingObjects{source, "document", docs})
		}
	}
	if confPath != "" {
		data, err := os.ReadFile(confPath)
		if err != nil {
			return nil, fail(confPath, "", "cannot read the configuration: %v", errors.Unwrap(err))
		}
		scn.ConfText = string(data)
	}
	if sessions > 0 {
		scn.Sessions = sessions
	}
	seen := map[string]string{}
	for _, p := range pending {
		for i, doc := range p.docs {
			where := fmt.Sprintf("%s[%d]", p.field, i)
			if p.field == "document" {
				where = ""
				if len(p.docs) > 1 {
					where = fmt.Sprintf("document %d", i+1)
				}
			}
			if err := scn.add(doc, p.source, where, seen); err != nil {
				return nil, err
			}
		}
	}
	if len(names) > 0 {
		scn.Name = strings.Join(names, " + ")
	} else {
		var base []string
		for _, p := range paths {
			base = append(base, filepath.Base(p))
		}
		scn.Name = strings.Join(base, ", ")
	}
	scn.Sources = append(scn.Sources, paths...)
	return scn, nil
}

func confBlockText(block any) (string, error) {
	switch b := block.(type) {
	case string:
		return b, nil
	case map[string]any:
		data, err := yaml.Marshal(b)
		if err != nil {
			return "", err
		}
		return string(data), nil
	default:
		return "", fmt.Errorf("expected volcano-scheduler.conf text or a mapping")
	}
}

// readDocuments returns the documents of a YAML or JSON file, each as a mapping.
func readDocuments(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fail(path, "", "cannot read the file: %v", pe.Err)
		}
		return nil, fail(path, "", "cannot read the file: %v", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		var doc any
		if err := json.Unmarshal(trimmed, &doc); err != nil {
			return nil, fail(path, "", "invalid JSON: %v", err)
		}
		return asDocuments(path, []any{doc})
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []any
	for {
		chunk, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fail(path, "", "invalid YAML: %v", err)
		}
		if len(bytes.TrimSpace(chunk)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, fail(path, "", "invalid YAML: %v", err)
		}
		var doc any
		if err := json.Unmarshal(js, &doc); err != nil {
			return nil, fail(path, "", "invalid YAML: %v", err)
		}
		if doc == nil {
			continue
		}
		docs = append(docs, doc)
	}
	return asDocuments(path, docs)
}

func asDocuments(path string, docs []any) ([]map[string]any, error) {
	var out []map[string]any
	for i, doc := range docs {
		if list, ok := doc.([]any); ok {
			for j, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, fail(path, fmt.Sprintf("item %d", j), "expected a Kubernetes object (a mapping)")
				}
				out = append(out, m)
			}
			continue
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, fail(path, fmt.Sprintf("document %d", i+1), "expected a mapping")
		}
		out = append(out, m)
	}
	return out, nil
}

var clusterScoped = map[string]bool{"Node": true, "PriorityClass": true, "Queue": true, "HyperNode": true}

var kindGroups = map[string]string{
	"Node": "", "Pod": "", "PriorityClass": "scheduling.k8s.io", "Queue": "scheduling.volcano.sh",
	"PodGroup": "scheduling.volcano.sh", "Job": "batch.volcano.sh", "HyperNode": "topology.volcano.sh",
}

func apiGroup(apiVersion string) string {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// add reads one object (a List adds its items) into the scenario.
func (scn *Scenario) add(doc map[string]any, source, where string, seen map[string]string) error {
	kind, _ := doc["kind"].(string)
	if kind == "" {
		return fail(source, where, "missing required field: kind")
	}
	if items, ok := doc["items"]; kind == "List" || (strings.HasSuffix(kind, "List") && ok) {
		if items == nil {
			return nil
		}
		list, ok := items.([]any)
		if !ok {
			return fail(source, where, "items: expected a list")
		}
		prefix := "items"
		if where != "" {
			prefix = where + ".items"
		}
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				return fail(source, fmt.Sprintf("%s[%d]", prefix, i), "expected a Kubernetes object (a mapping)")
			}
			if err := scn.add(m, source, fmt.Sprintf("%s[%d]", prefix, i), seen); err != nil {
				return err
			}
		}
		return nil
	}
	apiVersion, _ := doc["apiVersion"].(string)
	group, known := kindGroups[kind]
	if !known || (apiVersion != "" && apiGroup(apiVersion) != group) {
		scn.Warnings = append(scn.Warnings, fmt.Sprintf("%s: ignored an object of kind %s (%s)", source, kind, apiVersion))
		return nil
	}
	meta, _ := doc["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return fail(source, where, "%s: missing required field: metadata.name", kind)
	}
	namespace := ""
	if !clusterScoped[kind] {
		namespace, _ = meta["namespace"].(string)
		if namespace == "" {
			namespace = "default"
			meta["namespace"] = namespace
		}
	}
	label := kind + " " + name
	if namespace != "" {
		label = kind + " " + namespace + "/" + name
	}
	key := kind + "/" + namespace + "/" + name
	if first, dup := seen[key]; dup {
		return fail(source, label, "duplicate object: already defined at %s", first)
	}
	seen[key] = strings.TrimSuffix(source+": "+where, ": ")
	data, err := json.Marshal(doc)
	if err != nil {
		return fail(source, label, "%v", err)
	}
	decode := func(into any) error {
		if err := json.Unmarshal(data, into); err != nil {
			return fail(source, label, "%v", err)
		}
		return nil
	}
	switch kind {
	case "Node":
		obj := &v1.Node{}
		if err := decode(obj); err != nil {
			return err
		}
		scn.Nodes = append(scn.Nodes, obj)
	case "Pod":
		obj := &v1.Pod{}
		if err := decode(obj); err != nil {
			return err
		}
		if len(obj.Spec.Containers) == 0 {
			return fail(source, label, "missing required field: a pod needs at least one container (spec.containers)")
		}
		scn.Pods = append(scn.Pods, obj)
	case "PriorityClass":
		obj := &schedulingv1.PriorityClass{}
		if err := decode(obj); err != nil {
			return err
		}
		if _, ok := doc["value"]; !ok {
			return fail(source, label, "missing required field: value")
		}
		scn.PriorityClasses = append(scn.PriorityClasses, obj)
	case "Queue":
		obj := &schedv1beta1.Queue{}
		if err := decode(obj); err != nil {
			return err
		}
		scn.Queues = append(scn.Queues, obj)
	case "PodGroup":
		obj := &schedv1beta1.PodGroup{}
		if err := decode(obj); err != nil {
			return err
		}
		scn.PodGroups = append(scn.PodGroups, obj)
	case "Job":
		obj := &batchv1alpha1.Job{}
		if err := decode(obj); err != nil {
			return err
		}
		scn.Jobs = append(scn.Jobs, obj)
	case "HyperNode":
		obj := &topov1alpha1.HyperNode{}
		if err := decode(obj); err != nil {
			return err
		}
		scn.HyperNodes = append(scn.HyperNodes, obj)
	}
	return nil
}
