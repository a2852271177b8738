// Package schedsim runs Volcano's scheduler in-process on a scenario: its
// cache (the mock cache of Volcano's unit tests, fed through the cache's own
// event handlers), its session, actions and plugins, with a binder, evictor
// and status updater that record what the scheduler decided instead of
// writing to an API server.
//
// Between two sessions the cluster does what volcanolib's simulator says it
// does (docs/scenario-format.md): bound pods start running, evicted pods go
// away, and the PodGroup status the session wrote comes back, as the informer
// would bring it.
package schedsim

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"
	"volcano.sh/apis/pkg/apis/scheduling"
	schedulingscheme "volcano.sh/apis/pkg/apis/scheduling/scheme"
	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	nodeshardv1alpha1 "volcano.sh/apis/pkg/apis/shard/v1alpha1"
	topov1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"
	vcsched "volcano.sh/volcano/pkg/scheduler"
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/metrics"

	"volcanolib/oracle/internal/scenario"
)

// Condition is a PodGroup condition as a session wrote it.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// GroupState is a PodGroup's status after a session.
type GroupState struct {
	Phase      string      `json:"phase"`
	Conditions []Condition `json:"conditions"`
}

// SessionResult is what one session decided and wrote.
type SessionResult struct {
	Binds     map[string]string     `json:"binds"`
	Evictions []string              `json:"evictions"`
	Pipelined map[string]string     `json:"pipelined"`
	PodGroups map[string]GroupState `json:"podGroups"`
}

// GroupReport is a PodGroup at the end of a scenario.
type GroupReport struct {
	Phase     string `json:"phase"`
	Scheduled int    `json:"scheduled"`
	MinMember int32  `json:"minMember"`
}

// Result is the shape of `volcanolib simulate --json`, with the sessions' detail.
type Result struct {
	Sessions      int                    `json:"sessions"`
	Binds         map[string]string      `json:"binds"`
	Evictions     []string               `json:"evictions"`
	Pipelined     map[string]string      `json:"pipelined"`
	PodGroups     map[string]GroupReport `json:"podGroups"`
	Unschedulable map[string]string      `json:"unschedulable"`
	PerSession    []SessionResult        `json:"perSession,omitempty"`
	// Timings, in seconds: "cache" (feeding the objects to the cache) and "session" (the sessions,
	// open through close, summed), as volcanolib simulate --timings names them.
	Timings map[string]float64 `json:"timings,omitempty"`
}

// Release is the Volcano release the oracle is built from.
var Release = func() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "volcano.sh/volcano" {
				return dep.Version
			}
		}
	}
	return "(unknown release)"
}()

// ConfigError is a scheduler configuration Volcano refuses.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func init() {
	// The Kubernetes scheduler plugins that Volcano's predicates wrap report to these metrics.
	metrics.InitKubeSchedulerRelatedMetrics()
}

// Volcano's actions and plugin builders are process-wide; one scenario runs at a time.
var runLock sync.Mutex

// recorder is the cache Volcano's session talks to: the mock cache, with the
// bind and eviction requests and the PodGroup status writes recorded in order.
type recorder struct {
	*cache.SchedulerCache
	mu        sync.Mutex
	binds     [][2]string // pod key, node
	evictions []string
	written   map[string]*api.PodGroup
}

func (r *recorder) AddBindTask(bc *cache.BindContext) error {
	if err := r.SchedulerCache.AddBindTask(bc); err != nil {
		return err
	}
	r.mu.Lock()
	r.binds = append(r.binds, [2]string{bc.TaskInfo.Namespace + "/" + bc.TaskInfo.Name, bc.TaskInfo.NodeName})
	r.mu.Unlock()
	return nil
}

func (r *recorder) Evict(task *api.TaskInfo, reason string) error {
	if err := r.SchedulerCache.Evict(task, reason); err != nil {
		return err
	}
	r.mu.Lock()
	r.evictions = append(r.evictions, task.Namespace+"/"+task.Name)
	r.mu.Unlock()
	return nil
}

// statusWriter stands for the API server's status subresources.
type statusWriter struct{ rec *recorder }

func (s *statusWriter) UpdatePodStatus(pod *v1.Pod) (*v1.Pod, error) { return pod, nil }

func (s *statusWriter) UpdatePodGroup(pg *api.PodGroup) (*api.PodGroup, error) {
	s.rec.mu.Lock()
	s.rec.written[pg.Namespace+"/"+pg.Name] = &api.PodGroup{PodGroup: *pg.PodGroup.DeepCopy(), Version: pg.Version}
	s.rec.mu.Unlock()
	return pg, nil
}

func (s *statusWriter) UpdateQueueStatus(queue *api.QueueInfo) error { return nil }

func (s *statusWriter) UpdateNodeShardStatus(ns *nodeshardv1alpha1.NodeShard) (*nodeshardv1alpha1.NodeShard, error) {
	return ns, nil
}

type nullBinder struct{}

func (nullBinder) Bind(_ kubernetes.Interface, _ []*api.TaskInfo) map[api.TaskID]string { return nil }

// nullEvictor stands for the API server's eviction: the recorder has taken the eviction down.
type nullEvictor struct{}

func (nullEvictor) Evict(_ *v1.Pod, _ string) error { return nil }

// Known says, for each name, whether it is a plugin and whether it is an action of this Volcano.
func Known(names []string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, name := range names {
		_, plugin := framework.GetPluginBuilder(name)
		_, action := framework.GetAction(name)
		out[name] = map[string]bool{"plugin": plugin, "action": action}
	}
	return out
}

// ParseConf reads volcano-scheduler.conf text as Volcano does (its default when empty).
//
// Two things Volcano accepts with a logged error the oracle refuses, since
// the result would not answer the question asked: a plugin that is not one of
// Volcano's (it is left out of the session), and an empty action in a list
// of actions. An empty list of actions (`actions: ""`, a scenario that only
// scores nodes) runs no action.
func ParseConf(text string) ([]framework.Action, []conf.Tier, []conf.Configuration, error) {
	if text == "" {
		text = vcsched.DefaultSchedulerConf
	}
	var shape struct {
		Actions string `json:"actions"`
	}
	if err := yaml.Unmarshal([]byte(text), &shape); err != nil {
		return nil, nil, nil, &ConfigError{Msg: fmt.Sprintf("invalid scheduler configuration: %v", err)}
	}
	onlyScores := strings.TrimSpace(shape.Actions) == ""
	if onlyScores {
		text = "actions: enqueue\n" + stripActions(text)
	}
	actions, tiers, configurations, _, err := vcsched.UnmarshalSchedulerConf(text)
	if err != nil {
		msg := err.Error()
		if strings.HasPrefix(msg, "failed to find Action") {
			msg = fmt.Sprintf("action %q is not an action of Volcano %s", strings.TrimSpace(strings.TrimPrefix(msg, "failed to find Action")), Release)
		}
		return nil, nil, nil, &ConfigError{Msg: "invalid scheduler configuration: " + msg}
	}
	for _, tier := range tiers {
		for _, plugin := range tier.Plugins {
			if _, found := framework.GetPluginBuilder(plugin.Name); !found {
				return nil, nil, nil, &ConfigError{Msg: fmt.Sprintf("plugin %q is not a plugin of Volcano %s", plugin.Name, Release)}
			}
		}
	}
	if onlyScores {
		actions = nil
	}
	return actions, tiers, configurations, nil
}

// stripActions removes the top-level `actions` line of a configuration.
func stripActions(text string) string {
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "actions:") || strings.HasPrefix(line, " ") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

// Run runs a normalized scenario's sessions and returns what Volcano decided.
func Run(scn *scenario.Scenario, perSession bool) (result *Result, err error) {
	runLock.Lock()
	defer runLock.Unlock()
	resetProcessSwitches()
	defer func() {
		if recovered := recover(); recovered != nil {
			result, err = nil, asConfigError(recovered)
		}
	}()

	actions, tiers, configurations, err := ParseConf(scn.ConfText)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	var sc *cache.SchedulerCache
	defer func() {
		close(stop)
		if sc != nil {
			shutDownQueues(sc)
		}
	}()
	watch.DefaultChanSize = watchBuffer(scn)
	defer func() { watch.DefaultChanSize = minWatchBuffer }()

	fed := time.Now()
	rec := &recorder{written: map[string]*api.PodGroup{}}
	// The events the scheduler records go nowhere (a recorder without a channel): the default one
	// holds 100 and then blocks the session.
	sc = cache.NewCustomMockSchedulerCache(scn.SchedulerName, nullBinder{}, nullEvictor{}, &statusWriter{rec}, nil, &record.FakeRecorder{})
	rec.SchedulerCache = sc
	// The fake API loses what is written before an informer's watch starts: the cache must
	// watch pods before the first change between sessions is written.
	podsWatched := make(chan struct{})
	var watchOnce sync.Once
	if fakeClient, ok := sc.Client().(*kubefake.Clientset); ok {
		fakeClient.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
			w, err := fakeClient.Tracker().Watch(action.GetResource(), action.GetNamespace())
			watchOnce.Do(func() { close(podsWatched) })
			return true, w, err
		})
	} else {
		close(podsWatched)
	}

	// The objects, through the cache's own event handlers, as the informers deliver them.
	for _, pc := range scn.PriorityClasses {
		sc.AddPriorityClass(pc)
	}
	for _, q := range scn.Queues {
		sc.AddQueueV1beta1(q)
	}
	// A scheduler that has run for a while has built its plugins from the configuration, and
	// some plugins (deviceshare) set process-wide switches that decide how a node is read when
	// it is added or updated. A session on the empty cache builds them before the nodes come.
	conf.EnabledActionMap = map[string]bool{}
	framework.CloseSession(framework.OpenSession(rec, tiers, configurations))

	// Nodes in the given order (the order sessions list them in), as Volcano's unit tests add them.
	for _, node := range scn.Nodes {
		if err := sc.AddOrUpdateNode(node); err != nil {
			return nil, fmt.Errorf("node %s: %v", node.Name, err)
		}
	}
	if len(scn.HyperNodes) > 0 {
		// The topology is built by the cache's hypernode worker from its listers: the
		// nodes and HyperNodes go through the (fake) API, as in a cluster.
		for _, node := range scn.Nodes {
			if _, err := sc.Client().CoreV1().Nodes().Create(context.TODO(), node, metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("node %s: %v", node.Name, err)
			}
		}
		for _, hn := range scn.HyperNodes {
			if _, err := sc.VCClient().TopologyV1alpha1().HyperNodes().Create(context.TODO(), hn, metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("HyperNode %s: %v", hn.Name, err)
			}
		}
	}
	groups := map[string]*schedv1beta1.PodGroup{}
	for _, pg := range scn.PodGroups {
		groups[pg.Namespace+"/"+pg.Name] = pg
		sc.AddPodGroupV1beta1(pg)
	}
	// Pods go through the (fake) API server and the cache's pod informer, its filter included, as
	// in a cluster: plugins that write to a pod as they place it (deviceshare) find it there.
	// They are written before the informers start, so that their first list holds them all.
	var accepted []*v1.Pod
	for _, pod := range scn.Pods {
		if _, err := sc.Client().CoreV1().Pods(pod.Namespace).Create(context.TODO(), pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		if acceptedByInformer(pod, scn.SchedulerName) {
			accepted = append(accepted, pod)
		}
	}
	if len(scn.HyperNodes) > 0 {
		// The cache's hypernode worker builds the topology from its informers: the whole cache
		// runs. Its informers are started and synced first, so that the cache's own wait for
		// them (in steps of 100 ms) finds them synced at once.
		factories := []informerFactory{sc.SharedInformerFactory()}
		if vc := volcanoInformers(sc); vc != nil {
			factories = append(factories, vc)
		}
		for _, factory := range factories {
			factory.Start(stop)
		}
		if err := waitUntil(func() bool { return synced(factories) }); err != nil {
			return nil, fmt.Errorf("the scheduler cache's informers did not sync: %v", err)
		}
		sc.Run(stop)
		if err := syncHyperNodes(sc, scn.HyperNodes); err != nil {
			return nil, err
		}
	} else {
		startInformers(sc, stop)
	}
	if err := waitUntil(func() bool { return allInCache(sc, accepted) }); err != nil {
		return nil, fmt.Errorf("the scheduler cache did not take the pods: %v", err)
	}
	select {
	case <-podsWatched:
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("the scheduler cache did not watch the pods")
	}

	result = &Result{
		Sessions: scn.Sessions, Binds: map[string]string{}, Evictions: []string{}, Pipelined: map[string]string{},
		PodGroups: map[string]GroupReport{}, Unschedulable: map[string]string{},
	}
	evicted := map[string]bool{}
	sessionSeconds := 0.0
	cacheSeconds := time.Since(fed).Seconds()
	for index := 0; index < scn.Sessions; index++ {
		if index > 0 {
			if err := stepCluster(sc, rec, groups); err != nil {
				return nil, err
			}
		}
		rec.binds, rec.evictions = nil, nil
		conf.EnabledActionMap = map[string]bool{}
		for _, action := range actions {
			conf.EnabledActionMap[action.Name()] = true
		}
		opened := time.Now()
		ssn := framework.OpenSession(rec, tiers, configurations)
		for _, action := range actions {
			action.Initialize()
			action.Execute(ssn)
			action.UnInitialize()
		}
		pipelined := map[string]string{}
		last := index == scn.Sessions-1
		for _, job := range ssn.Jobs {
			for _, task := range job.TaskStatusIndex[api.Pipelined] {
				pipelined[task.Namespace+"/"+task.Name] = task.NodeName
			}
			if last && len(job.TaskStatusIndex[api.Pending]) > 0 {
				result.Unschedulable[string(job.UID)] = job.FitError()
			}
		}
		framework.CloseSession(ssn)
		sessionSeconds += time.Since(opened).Seconds()

		session := SessionResult{Binds: map[string]string{}, Evictions: []string{}, Pipelined: pipelined, PodGroups: map[string]GroupState{}}
		for _, b := range rec.binds {
			session.Binds[b[0]] = b[1]
			result.Binds[b[0]] = b[1]
		}
		for _, key := range rec.evictions {
			if !evicted[key] {
				evicted[key] = true
				session.Evictions = append(session.Evictions, key)
				result.Evictions = append(result.Evictions, key)
			}
		}
		sort.Strings(session.Evictions)
		for key, pg := range groups {
			state := GroupState{Phase: string(pg.Status.Phase), Conditions: conditionsOf(pg.Status.Conditions)}
			if w, ok := rec.written[key]; ok {
				state = GroupState{Phase: string(w.Status.Phase), Conditions: internalConditions(w.Status.Conditions)}
			}
			session.PodGroups[key] = state
		}
		if perSession {
			result.PerSession = append(result.PerSession, session)
		}
		if last {
			result.Pipelined = pipelined
		}
	}
	sort.Strings(result.Evictions)
	result.Timings = map[string]float64{"cache": cacheSeconds, "session": sessionSeconds}

	// One step later: what the next status update would write (docs/scenario-format.md).
	if err := stepCluster(sc, rec, groups); err != nil {
		return nil, err
	}
	ssn := framework.OpenSession(rec, tiers, configurations)
	scheduled := map[string]int{}
	for _, job := range ssn.Jobs {
		n := 0
		for status, tasks := range job.TaskStatusIndex {
			if api.ScheduledStatus(status) || (status == api.Releasing && anyOnNode(tasks)) {
				n += len(tasks)
			}
		}
		scheduled[string(job.UID)] = n
	}
	framework.CloseSession(ssn)
	for key, pg := range groups {
		phase := string(pg.Status.Phase)
		if w, ok := rec.written[key]; ok {
			phase = string(w.Status.Phase)
		}
		result.PodGroups[key] = GroupReport{Phase: phase, Scheduled: scheduled[key], MinMember: pg.Spec.MinMember}
	}
	return result, nil
}

func anyOnNode(tasks map[api.TaskID]*api.TaskInfo) bool {
	for _, t := range tasks {
		if t.NodeName != "" {
			return true
		}
	}
	return false
}

// acceptedByInformer is the scheduler's pod informer filter: its own pods, and
// other schedulers' pods only once they are on a node.
func acceptedByInformer(pod *v1.Pod, schedulerName string) bool {
	return pod.Spec.SchedulerName == schedulerName || pod.Spec.NodeName != ""
}

// allInCache says whether the cache holds every one of the pods, with their current phase and node.
func allInCache(sc *cache.SchedulerCache, pods []*v1.Pod) bool {
	sc.Mutex.Lock()
	defer sc.Mutex.Unlock()
	for _, pod := range pods {
		if !inCache(sc, pod) {
			return false
		}
	}
	return true
}

func inCache(sc *cache.SchedulerCache, pod *v1.Pod) bool {
	if group := pod.Annotations[schedv1beta1.KubeGroupNameAnnotationKey]; group != "" {
		job, ok := sc.Jobs[api.JobID(pod.Namespace+"/"+group)]
		if !ok {
			return false
		}
		task, ok := job.Tasks[api.TaskID(pod.UID)]
		return ok && task.NodeName == pod.Spec.NodeName && task.Pod.Status.Phase == pod.Status.Phase
	}
	node, ok := sc.Nodes[pod.Spec.NodeName]
	if !ok {
		return true // a pod of no job on no node the cache knows plays no part
	}
	_, ok = node.Tasks[api.TaskID(pod.UID)]
	return ok
}

// goneFromCache says whether none of the pods is in the cache any more.
func goneFromCache(sc *cache.SchedulerCache, pods []*v1.Pod) bool {
	sc.Mutex.Lock()
	defer sc.Mutex.Unlock()
	for _, pod := range pods {
		for _, job := range sc.Jobs {
			if _, ok := job.Tasks[api.TaskID(pod.UID)]; ok {
				return false
			}
		}
	}
	return true
}

// startInformers runs what the oracle needs of the cache's machinery when
// there is no network topology: the Kubernetes informers (pods come through
// them), and a reader of the bind queue (the oracle records binds as the
// session makes them; the fake binder has nothing to do). The whole cache
// (Cache.Run) waits for its informers in steps of 100 ms, which would be
// most of the time of a small scenario.
func startInformers(sc *cache.SchedulerCache, stop <-chan struct{}) {
	factory := sc.SharedInformerFactory()
	factory.Start(stop)
	// The other informers list empty fake collections: only the pods' must have arrived.
	pods := factory.Core().V1().Pods().Informer()
	for !pods.HasSynced() {
		time.Sleep(100 * time.Microsecond)
	}
	go func() {
		for {
			select {
			case <-sc.BindFlowChannel:
			case <-stop:
				return
			}
		}
	}()
}

// waitUntil waits for the cache's informers to deliver what was written. It looks soon (a small
// scenario's whole run takes a few milliseconds), then less and less often (a look at a large
// scenario holds the cache's lock, which the informers need).
func waitUntil(cond func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	pause := 50 * time.Microsecond
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out")
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Millisecond)
	}
	return nil
}

// informerFactory is what the oracle uses of Kubernetes' and Volcano's informer factories.
type informerFactory interface {
	Start(stop <-chan struct{})
	WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool
}

// synced says whether every informer the factories started has listed its collection (one
// look each: the factories' own wait, with a closed channel, looks once and returns).
func synced(factories []informerFactory) bool {
	closed := make(chan struct{})
	close(closed)
	for _, factory := range factories {
		for _, ok := range factory.WaitForCacheSync(closed) {
			if !ok {
				return false
			}
		}
	}
	return true
}

// volcanoInformers is the cache's factory of informers of Volcano's own kinds, which the
// cache does not export; nil if this Volcano names it otherwise.
func volcanoInformers(sc *cache.SchedulerCache) informerFactory {
	field := reflect.ValueOf(sc).Elem().FieldByName("vcInformerFactory")
	if !field.IsValid() {
		return nil
	}
	factory, _ := fieldValue(field).(informerFactory)
	return factory
}

// shutDownQueues ends the cache's work queues, which the cache never ends: each keeps a
// goroutine, and the whole cache with it, for the rest of the process, and the workers that
// wait on them (started by Cache.Run) stop only once their queue is ended.
func shutDownQueues(sc *cache.SchedulerCache) {
	fields := reflect.ValueOf(sc).Elem()
	for i := 0; i < fields.NumField(); i++ {
		if queue, ok := fieldValue(fields.Field(i)).(interface{ ShutDown() }); ok {
			queue.ShutDown()
		}
	}
}

// fieldValue is the value of a field of an addressable struct, exported or not (nil for a nil
// interface or pointer).
func fieldValue(field reflect.Value) any {
	value := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem()
	switch value.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func:
		if value.IsNil() {
			return nil
		}
	}
	return value.Interface()
}

// stepCluster does what the cluster does between two sessions: the status
// written comes back through the informer, bound pods start running, and
// evicted or deleted pods go away (through the API, so the informer delivers them).
func stepCluster(sc *cache.SchedulerCache, rec *recorder, groups map[string]*schedv1beta1.PodGroup) error {
	keys := make([]string, 0, len(rec.written))
	for key := range rec.written {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		old, ok := groups[key]
		if !ok {
			continue
		}
		updated := &schedv1beta1.PodGroup{}
		if err := schedulingscheme.Scheme.Convert(&rec.written[key].PodGroup, updated, nil); err != nil {
			continue
		}
		updated.ResourceVersion = nextVersion(old.ResourceVersion)
		sc.UpdatePodGroupV1beta1(old, updated)
		groups[key] = updated
	}
	type move struct {
		namespace, name, node string
	}
	var starting, going []move
	sc.Mutex.Lock()
	for _, job := range sc.Jobs {
		for _, task := range job.Tasks {
			switch task.Status {
			case api.Binding, api.Bound:
				starting = append(starting, move{task.Namespace, task.Name, task.NodeName})
			case api.Releasing:
				going = append(going, move{task.Namespace, task.Name, task.NodeName})
			}
		}
	}
	sc.Mutex.Unlock()
	sort.Slice(starting, func(i, j int) bool { return starting[i].name < starting[j].name })
	ctx := context.TODO()
	pods := sc.Client().CoreV1()
	var started, deleted []*v1.Pod
	for _, m := range starting {
		pod, err := pods.Pods(m.namespace).Get(ctx, m.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.ResourceVersion = nextVersion(pod.ResourceVersion)
		pod.Spec.NodeName = m.node
		pod.Status.Phase = v1.PodRunning
		updated, err := pods.Pods(m.namespace).Update(ctx, pod, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		started = append(started, updated)
	}
	for _, m := range going {
		pod, err := pods.Pods(m.namespace).Get(ctx, m.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := pods.Pods(m.namespace).Delete(ctx, m.name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		deleted = append(deleted, pod)
	}
	if err := waitUntil(func() bool { return allInCache(sc, started) && goneFromCache(sc, deleted) }); err != nil {
		return fmt.Errorf("the scheduler cache did not take the cluster's changes between sessions: %v", err)
	}
	return nil
}

// nextVersion is a resourceVersion newer than v, as the API server gives an object it updates.
func nextVersion(v string) string {
	n, _ := strconv.Atoi(v)
	return strconv.Itoa(n + 1)
}

func conditionsOf(conds []schedv1beta1.PodGroupCondition) []Condition {
	out := []Condition{}
	for _, c := range conds {
		out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func internalConditions(conds []scheduling.PodGroupCondition) []Condition {
	out := []Condition{}
	for _, c := range conds {
		out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// syncHyperNodes builds the cache's network topology from the HyperNodes, as
// its hypernode worker does once the informers have delivered them.
func syncHyperNodes(sc *cache.SchedulerCache, hyperNodes []*topov1alpha1.HyperNode) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		sc.HyperNodesInfo.Lock()
		n := len(sc.HyperNodesInfo.HyperNodes())
		sc.HyperNodesInfo.Unlock()
		if n >= len(hyperNodes) {
			return nil
		}
		time.Sleep(50 * time.Microsecond)
	}
	return fmt.Errorf("the scheduler cache did not take the %d HyperNodes in time", len(hyperNodes))
}
