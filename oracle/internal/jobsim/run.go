package jobsim

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	"volcano.sh/volcano/pkg/controllers/framework"
	_ "volcano.sh/volcano/pkg/controllers/job" // registers the job controller

	"volcanolib/oracle/internal/controllers"
)

// Record is the state after one step: the Job's status, what the controller created and
// deleted during the step (pods, by name, sorted), the PodGroup and the pods that exist.
type Record struct {
	Step       int      `json:"step"`
	Phase      string   `json:"phase"`
	RetryCount int32    `json:"retryCount"`
	Version    int32    `json:"version"`
	Created    []string `json:"created"`
	Deleted    []string `json:"deleted"`
	// PodGroup is the phase of the Job's PodGroup ("" before the scheduler sets one), nil when there is none.
	PodGroup *string `json:"podGroup"`
	// Pods are the Job's pods that exist, with their phases.
	Pods map[string]string `json:"pods"`
}

// SchedulerName is the scheduler the Jobs' pods name.
const SchedulerName = "volcano"

// DefaultQueue is the queue that always exists, Open.
const DefaultQueue = "default"

// DefaultUIDPrefix makes the uid of a Job whose manifest names none: the prefix and its name.
const DefaultUIDPrefix = "uid-"

// neverResync is the informers' resync period. Volcano's is none (0), but then client-go
// waits on a channel made outside the bubble, and the bubble never counts as idle. A
// period no run of sequences reaches has the same effect; a resync would be ignored anyway
// (the controller drops updates whose resourceVersion did not change).
const neverResync = 100 * 365 * 24 * time.Hour

// Sim is one fake cluster with Volcano's job controller running on it. It runs the
// sequences one after another, each in a namespace of its own. It must be made and
// used inside a synctest bubble: the controller's time is the bubble's, so policy
// timeouts pass when a wait step lets them, and "the controller is done" is
// "every goroutine of the bubble is blocked".
type Sim struct {
	vcT, kubeT *tracker // the driver's writes: not logged
	log        *writeLog
	stop       chan struct{}
	count      int
	errors     *errorLog
	// waiting lets one goroutine at a time wait for the bubble to be idle (synctest.Wait
	// allows one); a goroutine waiting for its turn counts as blocked.
	waiting chan struct{}
	// turns counts the goroutines waiting for their turn.
	turns atomic.Int32
}

// New starts the job controller on a new fake cluster that holds the default queue.
func New() (*Sim, error) {
	kube := kubefake.NewSimpleClientset()
	vc := vcfake.NewSimpleClientset()
	version := &atomic.Int64{}
	log := newWriteLog()
	kube.PrependReactor("*", "*", k8stesting.ObjectReaction(&tracker{kube.Tracker(), version, log}))
	vc.PrependReactor("*", "*", k8stesting.ObjectReaction(&tracker{vc.Tracker(), version, log}))
	// The controller's Events are not kept: nothing reads them, and they would pile up.
	drop := func(action k8stesting.Action) (bool, runtime.Object, error) { return true, &v1.Event{}, nil }
	kube.PrependReactor("*", "events", drop)
	s := &Sim{
		vcT:     &tracker{vc.Tracker(), version, nil},
		kubeT:   &tracker{kube.Tracker(), version, nil},
		log:     log,
		stop:    make(chan struct{}),
		errors:  &errorLog{},
		waiting: make(chan struct{}, 1),
	}
	klog.SetOutputBySeverity("ERROR", s.errors)

	queue := &schedv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultQueue},
		Spec:       schedv1beta1.QueueSpec{Weight: 1},
		Status:     schedv1beta1.QueueStatus{State: schedv1beta1.QueueStateOpen},
	}
	if err := s.vcT.Create(queuesResource, queue, ""); err != nil {
		return nil, err
	}
	kinf := informers.NewSharedInformerFactory(kube, neverResync)
	vinf := vcinformers.NewSharedInformerFactory(vc, neverResync)
	queueLister := vinf.Scheduling().V1beta1().Queues().Lister()
	if err := controllers.ConfigureAdmission(kube, vc, queueLister, SchedulerName); err != nil {
		return nil, err
	}
	opt := &framework.ControllerOption{
		KubeClient: kubeClient{kube, s.seen}, VolcanoClient: vcClient{vc, s.seen},
		SharedInformerFactory: kinf, VCSharedInformerFactory: vinf,
		SchedulerNames: []string{SchedulerName},
		WorkerNum:      1, MaxRequeueNum: 15, InheritOwnerAnnotations: true,
		WorkerThreadsForPG: 1, WorkerThreadsForQueue: 1, WorkerThreadsForGC: 1,
	}
	var started bool
	var initErr error
	framework.ForeachController(func(c framework.Controller) {
		if c.Name() != "job-controller" {
			return
		}
		if initErr = c.Initialize(opt); initErr == nil {
			if initErr = takeRequestsWhenIdle(c, s.quiet); initErr == nil {
				started = true
				go c.Run(s.stop)
			}
		}
	})
	if initErr != nil {
		return nil, fmt.Errorf("job-controller: %v", initErr)
	}
	if !started {
		return nil, fmt.Errorf("Volcano's job controller is not registered")
	}
	s.settle()
	return s, nil
}

// Close stops the controller.
func (s *Sim) Close() { close(s.stop) }

// Outcome is what one sequence gave: a record per step (the first, step 0, after the Job
// was created) and what Volcano logged as errors meanwhile.
type Outcome struct {
	Records []Record `json:"records"`
	Errors  []string `json:"controllerErrors,omitempty"`
}

// Run drives one sequence. An error is the sequence's: a Job Volcano's admission refuses.
func (s *Sim) Run(seq *Sequence) (*Outcome, error) {
	s.count++
	s.errors.take()
	job := seq.Job.DeepCopy()
	if job.Namespace == "" {
		job.Namespace = "default"
	}
	if job.UID == "" {
		job.UID = types.UID(DefaultUIDPrefix + job.Name)
	}

	defer func() {
		for _, q := range seq.Queues {
			if q.Name != DefaultQueue {
				_ = s.vcT.Delete(queuesResource, "", q.Name)
			}
		}
		s.settle()
	}()
	for _, q := range seq.Queues {
		q = q.DeepCopy()
		if q.Status.State == "" {
			q.Status.State = schedv1beta1.QueueStateOpen
		}
		if err := s.vcT.Create(queuesResource, q, ""); err != nil {
			if err := s.vcT.Update(queuesResource, q, ""); err != nil {
				return nil, err
			}
		}
	}
	s.settle()
	admitted, err := controllers.Admit(job)
	if err != nil {
		return nil, err
	}
	// Each sequence has a namespace of its own: what is left of the last one cannot reach it.
	ns := fmt.Sprintf("%s-%d", job.Namespace, s.count)
	admitted.Namespace = ns
	defer s.cleanup(ns)
	if admitted.CreationTimestamp.IsZero() {
		admitted.CreationTimestamp = metav1.Now()
	}
	if err := s.vcT.Create(jobsResource, admitted, ns); err != nil {
		return nil, err
	}
	s.settle()
	pgName := fmt.Sprintf("%s-%s", job.Name, job.UID)
	out := &Outcome{Records: []Record{s.record(0, ns, job.Name, pgName)}}
	for i, step := range seq.Steps {
		if err := s.apply(seq, step, i+1, ns, job, pgName); err != nil {
			return nil, fmt.Errorf("steps[%d]: %v", i, err)
		}
		out.Records = append(out.Records, s.record(i+1, ns, job.Name, pgName))
	}
	out.Errors = s.errors.take()
	return out, nil
}

// apply makes one step happen, each pod's change on its own, and waits until the
// controller has done all it does about it.
func (s *Sim) apply(seq *Sequence, step Step, index int, ns string, job *batchv1alpha1.Job, pgName string) error {
	switch step.Kind {
	case StepPodGroup:
		obj, err := s.vcT.Get(podGroupsResource, ns, pgName)
		if err != nil {
			return nil // no PodGroup: nothing to admit
		}
		pg := obj.(*schedv1beta1.PodGroup)
		if string(pg.Status.Phase) == step.Phase {
			return nil
		}
		pg.Status.Phase = schedv1beta1.PodGroupPhase(step.Phase)
		if err := s.vcT.Update(podGroupsResource, pg, ns); err != nil {
			return err
		}
		s.settle()
	case StepRunning, StepSucceeded, StepFailed, StepEvict:
		for _, name := range Resolve(step.Pods, s.podNames(ns)) {
			obj, err := s.kubeT.Get(podsResource, ns, name)
			if err != nil {
				continue // gone meanwhile
			}
			pod := obj.(*v1.Pod)
			if pod.DeletionTimestamp != nil {
				continue
			}
			if step.Kind == StepEvict {
				if err := s.kubeT.Delete(podsResource, ns, name); err != nil {
					return err
				}
			} else {
				if !setPhase(pod, step, seq.SucceededReady) {
					continue
				}
				if err := s.kubeT.Update(podsResource, pod, ns); err != nil {
					return err
				}
			}
			s.settle()
		}
	case StepWait:
		time.Sleep(step.Wait)
		s.idle()
	case StepCommand:
		cmd := &busv1alpha1.Command{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-command-%d", job.Name, index), Namespace: ns},
			Action:     step.Action,
			TargetObject: &metav1.OwnerReference{
				APIVersion: batchv1alpha1.SchemeGroupVersion.String(), Kind: "Job",
				Name: job.Name, UID: job.UID, Controller: ptr(true),
			},
		}
		if err := s.vcT.Create(commandsResource, cmd, ns); err != nil {
			return err
		}
		s.settle()
	}
	return nil
}

// CanMove says whether a pod in phase from may move to phase to: a pod starts from
// Pending, and finishes from Pending or Running.
func CanMove(from, to string) bool {
	switch to {
	case string(v1.PodRunning):
		return from == string(v1.PodPending)
	case string(v1.PodSucceeded), string(v1.PodFailed):
		return from == string(v1.PodPending) || from == string(v1.PodRunning)
	}
	return false
}

var stepPhase = map[string]v1.PodPhase{StepRunning: v1.PodRunning, StepSucceeded: v1.PodSucceeded, StepFailed: v1.PodFailed}

// setPhase gives a pod the phase of a running, succeeded or failed step, with the
// container statuses a kubelet reports (a Succeeded pod's container Ready only with
// succeededReady); false when the pod cannot move there.
func setPhase(pod *v1.Pod, step Step, succeededReady bool) bool {
	phase := stepPhase[step.Kind]
	if !CanMove(string(pod.Status.Phase), string(phase)) {
		return false
	}
	name := ""
	if len(pod.Spec.Containers) > 0 {
		name = pod.Spec.Containers[0].Name
	}
	status := v1.ContainerStatus{Name: name}
	switch phase {
	case v1.PodRunning:
		status.Ready = true
		status.Started = ptr(true)
		status.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.Now()}
	case v1.PodSucceeded:
		status.Ready = succeededReady
		status.State.Terminated = &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}
	case v1.PodFailed:
		status.State.Terminated = &v1.ContainerStateTerminated{ExitCode: step.ExitCode, Reason: "Error"}
	}
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []v1.ContainerStatus{status}
	if pod.Spec.NodeName == "" {
		pod.Spec.NodeName = "node-0"
	}
	return true
}

func (s *Sim) pods(ns string) []v1.Pod {
	obj, err := s.kubeT.List(podsResource, podKind, ns)
	if err != nil {
		return nil
	}
	return obj.(*v1.PodList).Items
}

func (s *Sim) podNames(ns string) []string {
	var names []string
	for _, p := range s.pods(ns) {
		names = append(names, p.Name)
	}
	return names
}

func (s *Sim) record(step int, ns, name, pgName string) Record {
	r := Record{Step: step, Pods: map[string]string{}}
	if obj, err := s.vcT.Get(jobsResource, ns, name); err == nil {
		job := obj.(*batchv1alpha1.Job)
		r.Phase = string(job.Status.State.Phase)
		r.RetryCount = job.Status.RetryCount
		r.Version = job.Status.Version
	}
	r.Created, r.Deleted = s.log.take(ns)
	if obj, err := s.vcT.Get(podGroupsResource, ns, pgName); err == nil {
		phase := string(obj.(*schedv1beta1.PodGroup).Status.Phase)
		r.PodGroup = &phase
	}
	for _, p := range s.pods(ns) {
		r.Pods[p.Name] = string(p.Status.Phase)
	}
	return r
}

// cleanup deletes what a sequence left, so that the controller forgets it.
func (s *Sim) cleanup(ns string) {
	if list, err := s.vcT.List(jobsResource, batchv1alpha1.SchemeGroupVersion.WithKind("Job"), ns); err == nil {
		for _, j := range list.(*batchv1alpha1.JobList).Items {
			_ = s.vcT.Delete(jobsResource, ns, j.Name)
		}
	}
	for _, p := range s.pods(ns) {
		_ = s.kubeT.Delete(podsResource, ns, p.Name)
	}
	if list, err := s.vcT.List(podGroupsResource, schedv1beta1.SchemeGroupVersion.WithKind("PodGroup"), ns); err == nil {
		for _, pg := range list.(*schedv1beta1.PodGroupList).Items {
			_ = s.vcT.Delete(podGroupsResource, ns, pg.Name)
		}
	}
	if list, err := s.vcT.List(commandsResource, busv1alpha1.SchemeGroupVersion.WithKind("Command"), ns); err == nil {
		for _, c := range list.(*busv1alpha1.CommandList).Items {
			_ = s.vcT.Delete(commandsResource, ns, c.Name)
		}
	}
	s.settle()
	s.log.take(ns)
	s.errors.take()
}

func ptr[T any](v T) *T { return &v }

// Settle is the controller's time each write of the driver takes: the write happens,
// then this much time passes, in which the controller reacts. Volcano's own short
// waits (an informer's sync poll, the retry of a failed action) end within it.
const Settle = time.Second

// settle lets Settle pass on the bubble's clock and returns once every goroutine of
// the bubble is blocked: the controller has done all it does until later timers.
func (s *Sim) settle() {
	time.Sleep(Settle)
	s.idle()
}

// idle returns once every other goroutine of the bubble is blocked and none of them
// waits for its turn to wait (a worker about to take a request): the controller is done.
func (s *Sim) idle() {
	for {
		s.quiet()
		if s.turns.Load() == 0 {
			return
		}
	}
}

// seen follows a write of the controller: it returns once the controller's watches
// have delivered it, except in a delayed action (see takeRequestsWhenIdle).
func (s *Sim) seen() {
	if !inDelayedAction() {
		s.quiet()
	}
}

// quiet returns once every other goroutine of the bubble is blocked.
func (s *Sim) quiet() {
	s.turns.Add(1)
	s.waiting <- struct{}{}
	s.turns.Add(-1)
	synctest.Wait()
	<-s.waiting
}

// errorLog keeps the messages Volcano logs at ERROR severity.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if i := strings.Index(line, "] "); i >= 0 {
			line = line[i+2:]
		}
		if line != "" {
			l.lines = append(l.lines, line)
		}
	}
	return len(p), nil
}

func (l *errorLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	sort.Strings(out)
	return out
}
