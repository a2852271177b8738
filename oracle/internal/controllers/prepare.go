// Package controllers runs Volcano's own admission webhooks and controllers
// in-process, on fake clients, to make what a cluster would hold before the
// scheduler sees it: the PodGroup of a pod that names none (the podgroup
// controller), and the PodGroup and pods of a Volcano Job (the job webhooks,
// then the job controller).
//
// volcanolib's simulator makes a Job's pods at once, where Volcano's job
// controller makes them once the scheduler has admitted the PodGroup
// (docs/scenario-format.md). To show the scheduler the same cluster, the
// PodGroup is set to Inqueue here while the controller makes the pods, then
// set back to Pending.
package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclientset "volcano.sh/apis/pkg/client/clientset/versioned"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	schedlisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"
	wkoptions "volcano.sh/volcano/cmd/webhook-manager/app/options"
	"volcano.sh/volcano/pkg/controllers/framework"
	_ "volcano.sh/volcano/pkg/controllers/job"
	_ "volcano.sh/volcano/pkg/controllers/podgroup"
	"volcano.sh/volcano/pkg/webhooks/admission/jobs/mutate"
	"volcano.sh/volcano/pkg/webhooks/admission/jobs/validate"
	"volcano.sh/volcano/pkg/webhooks/router"

	"volcanolib/oracle/internal/scenario"
)

// GroupAnnotation names a pod's PodGroup.
const GroupAnnotation = schedv1beta1.KubeGroupNameAnnotationKey

// Settle is how long the objects must stay unchanged for the controllers to count as done.
const Settle = 60 * time.Millisecond

// Prepare runs the job webhooks and the job and podgroup controllers over the
// scenario's Jobs and its scheduler's pods without a PodGroup, and puts what
// they made into the scenario. It does nothing when there is nothing to make.
func Prepare(scn *scenario.Scenario) error {
	var groupless []*v1.Pod
	for _, pod := range scn.Pods {
		if pod.Spec.SchedulerName == scn.SchedulerName && pod.Annotations[GroupAnnotation] == "" {
			groupless = append(groupless, pod)
		}
	}
	if len(scn.Jobs) == 0 && len(groupless) == 0 {
		return nil
	}
	ctx := context.TODO()
	kube := kubefake.NewSimpleClientset()
	vc := vcfake.NewSimpleClientset()
	// The API server gives every object it writes a new resourceVersion; Volcano's job
	// controller reads it. The fake clients do not, so a reactor does, before they store it.
	var version atomic.Int64
	stamp := func(action k8stesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a := action.(type) {
		case k8stesting.CreateAction:
			obj = a.GetObject()
		case k8stesting.UpdateAction:
			obj = a.GetObject()
		}
		if accessor, err := meta.Accessor(obj); err == nil && obj != nil {
			accessor.SetResourceVersion(strconv.FormatInt(version.Add(1), 10))
		}
		return false, nil, nil
	}
	kube.PrependReactor("*", "*", stamp)
	vc.PrependReactor("*", "*", stamp)
	for _, q := range scn.Queues {
		if _, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, pc := range scn.PriorityClasses {
		if _, err := kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, pg := range scn.PodGroups {
		if _, err := vc.SchedulingV1beta1().PodGroups(pg.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	inputPods := map[string]*v1.Pod{}
	for _, pod := range scn.Pods {
		inputPods[pod.Namespace+"/"+pod.Name] = pod
		if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}

	stop := make(chan struct{})
	defer close(stop)
	kinf := informers.NewSharedInformerFactory(kube, 0)
	vinf := vcinformers.NewSharedInformerFactory(vc, 0)
	queueInformer := vinf.Scheduling().V1beta1().Queues()
	queueLister := queueInformer.Lister()
	queueInformer.Informer()
	vinf.Start(stop)
	vinf.WaitForCacheSync(stop)

	if err := ConfigureAdmission(kube, vc, queueLister, scn.SchedulerName); err != nil {
		return err
	}
	jobs := make([]*batchv1alpha1.Job, 0, len(scn.Jobs))
	for _, job := range scn.Jobs {
		admitted, err := Admit(job)
		if err != nil {
			return err
		}
		if admitted.CreationTimestamp.IsZero() {
			admitted.CreationTimestamp = metav1.NewTime(time.Unix(0, 0))
		}
		if _, err := vc.BatchV1alpha1().Jobs(admitted.Namespace).Create(ctx, admitted, metav1.CreateOptions{}); err != nil {
			return err
		}
		jobs = append(jobs, admitted)
	}

	opt := &framework.ControllerOption{
		KubeClient: kube, VolcanoClient: vc,
		SharedInformerFactory: kinf, VCSharedInformerFactory: vinf,
		SchedulerNames: []string{scn.SchedulerName},
		WorkerNum:      1, MaxRequeueNum: 15, InheritOwnerAnnotations: true,
		WorkerThreadsForPG: 1, WorkerThreadsForQueue: 1, WorkerThreadsForGC: 1,
	}
	var started []string
	var initErr error
	framework.ForeachController(func(c framework.Controller) {
		if c.Name() != "job-controller" && c.Name() != "pg-controller" {
			return
		}
		if err := c.Initialize(opt); err != nil {
			initErr = fmt.Errorf("%s: %v", c.Name(), err)
			return
		}
		started = append(started, c.Name())
		go c.Run(stop)
	})
	if initErr != nil {
		return initErr
	}

	// Every Job gets its PodGroup, every groupless pod a group.
	made := func() bool {
		for _, job := range jobs {
			if pgOf(ctx, vc, job) == nil {
				return false
			}
		}
		for _, pod := range groupless {
			got, err := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil || got.Annotations[GroupAnnotation] == "" {
				return false
			}
		}
		return true
	}
	if err := waitFor(made, 20*time.Second); err != nil {
		return fmt.Errorf("Volcano's controllers did not make the PodGroups in time (%v)", err)
	}
	// Admit the Jobs' new PodGroups so that the job controller makes their pods.
	admittedHere := map[string]bool{}
	for _, job := range jobs {
		pg := pgOf(ctx, vc, job)
		if pg.Status.Phase == "" || pg.Status.Phase == schedv1beta1.PodGroupPending {
			next := pg.DeepCopy()
			next.Status.Phase = schedv1beta1.PodGroupInqueue
			if _, err := vc.SchedulingV1beta1().PodGroups(pg.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
				return err
			}
			admittedHere[pg.Namespace+"/"+pg.Name] = true
		}
	}
	if len(jobs) > 0 {
		settle(func() int {
			list, _ := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return len(list.Items)
		}, 20*time.Second)
	}
	for key := range admittedHere {
		ns, name, _ := strings.Cut(key, "/")
		pg, err := vc.SchedulingV1beta1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pg.Status.Phase = schedv1beta1.PodGroupPending
		if _, err := vc.SchedulingV1beta1().PodGroups(ns).UpdateStatus(ctx, pg, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}

	// What the cluster now holds: the input's objects in their order, then the new ones by name.
	pgList, err := vc.SchedulingV1beta1().PodGroups("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	podList, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	creation := map[string]metav1.Time{}
	rename := map[string]string{}
	for _, job := range jobs {
		creation[job.Namespace+"/"+job.Name] = job.CreationTimestamp
		if job.UID == "" {
			// A hand-written Job has no uid; its PodGroup is named after it alone, as volcanolib names it.
			rename[job.Namespace+"/"+job.Name+"-"] = job.Name
		}
	}
	byKey := map[string]*schedv1beta1.PodGroup{}
	for i := range pgList.Items {
		pg := &pgList.Items[i]
		if to, ok := rename[pg.Namespace+"/"+pg.Name]; ok {
			pg.Name = to
		}
		if owner := metav1.GetControllerOf(pg); owner != nil && owner.Kind == "Job" && pg.CreationTimestamp.IsZero() {
			pg.CreationTimestamp = creation[pg.Namespace+"/"+owner.Name]
		}
		byKey[pg.Namespace+"/"+pg.Name] = pg
	}
	scn.PodGroups = ordered(scn.PodGroups, byKey, func(pg *schedv1beta1.PodGroup) string { return pg.Namespace + "/" + pg.Name })
	podsByKey := map[string]*v1.Pod{}
	for i := range podList.Items {
		pod := &podList.Items[i]
		if group := pod.Annotations[GroupAnnotation]; group != "" {
			if to, ok := rename[pod.Namespace+"/"+group]; ok {
				pod.Annotations[GroupAnnotation] = to
			}
		}
		if _, input := inputPods[pod.Namespace+"/"+pod.Name]; !input {
			if owner := metav1.GetControllerOf(pod); owner != nil && owner.Kind == "Job" && pod.CreationTimestamp.IsZero() {
				pod.CreationTimestamp = creation[pod.Namespace+"/"+owner.Name]
			}
			if pod.Status.Phase == "" {
				pod.Status.Phase = v1.PodPending
			}
		}
		podsByKey[pod.Namespace+"/"+pod.Name] = pod
	}
	scn.Pods = ordered(scn.Pods, podsByKey, func(p *v1.Pod) string { return p.Namespace + "/" + p.Name })
	return nil
}

// ConfigureAdmission points Volcano's job webhooks at a cluster: its clients, its
// queues (validation reads them) and the scheduler name the defaults give.
func ConfigureAdmission(kube kubernetes.Interface, vc vcclientset.Interface, queues schedlisters.QueueLister, schedulerName string) error {
	// The job webhooks: defaults, then validation, as the API server calls them.
	return router.ForEachAdmission(&wkoptions.Config{EnabledAdmission: "/jobs/mutate,/jobs/validate"}, func(s *router.AdmissionService) error {
		s.Config.SchedulerNames = []string{schedulerName}
		s.Config.KubeClient = kube
		s.Config.VolcanoClient = vc
		s.Config.QueueLister = queues
		return nil
	})
}

// Admit applies the job webhooks, as ConfigureAdmission set them up, to a Job:
// Volcano's defaults, then its validation. A refusal is a *RefusedError.
func Admit(job *batchv1alpha1.Job) (*batchv1alpha1.Job, error) {
	raw, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	review := admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{
		Operation: admissionv1.Create,
		Resource:  metav1.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"},
		Object:    runtime.RawExtension{Raw: raw},
	}}
	mutated := mutate.Jobs(review)
	if !mutated.Allowed {
		return nil, refused(job, mutated)
	}
	if len(mutated.Patch) > 0 {
		patch, err := jsonpatch.DecodePatch(mutated.Patch)
		if err != nil {
			return nil, err
		}
		if raw, err = patch.Apply(raw); err != nil {
			return nil, err
		}
	}
	review.Request.Object = runtime.RawExtension{Raw: raw}
	if verdict := validate.AdmitJobs(review); !verdict.Allowed {
		return nil, refused(job, verdict)
	}
	out := &batchv1alpha1.Job{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RefusedError is a Job Volcano's admission refuses.
type RefusedError struct {
	Job string
	Msg string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("Job %s: Volcano's admission refuses it: %s", e.Job, e.Msg)
}

func refused(job *batchv1alpha1.Job, r *admissionv1.AdmissionResponse) error {
	msg := "refused"
	if r.Result != nil && r.Result.Message != "" {
		msg = r.Result.Message
	}
	return &RefusedError{Job: job.Namespace + "/" + job.Name, Msg: msg}
}

func pgOf(ctx context.Context, vc *vcfake.Clientset, job *batchv1alpha1.Job) *schedv1beta1.PodGroup {
	for _, name := range []string{job.Name + "-" + string(job.UID), job.Name} {
		if pg, err := vc.SchedulingV1beta1().PodGroups(job.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			return pg
		}
	}
	return nil
}

func waitFor(cond func() bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// settle waits until count() stays the same for Settle.
func settle(count func() int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	last, since := count(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		if n := count(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= Settle {
			return
		}
	}
}

// ordered lists the objects of byKey: those of input first, in its order, then the others by key.
func ordered[T any](input []T, byKey map[string]T, key func(T) string) []T {
	out := make([]T, 0, len(byKey))
	seen := map[string]bool{}
	for _, obj := range input {
		k := key(obj)
		if got, ok := byKey[k]; ok {
			out = append(out, got)
			seen[k] = true
		}
	}
	var rest []string
	for k := range byKey {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, byKey[k])
	}
	return out
}
