package jobsim

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

var (
	podsResource      = v1.SchemeGroupVersion.WithResource("pods")
	podKind           = v1.SchemeGroupVersion.WithKind("Pod")
	jobsResource      = batchv1alpha1.SchemeGroupVersion.WithResource("jobs")
	podGroupsResource = schedv1beta1.SchemeGroupVersion.WithResource("podgroups")
	queuesResource    = schedv1beta1.SchemeGroupVersion.WithResource("queues")
	commandsResource  = busv1alpha1.SchemeGroupVersion.WithResource("commands")
)

// writeLog is what the controller created and deleted, pods and PodGroups, by namespace.
type writeLog struct {
	mu      sync.Mutex
	created map[string][]string
	deleted map[string][]string
}

func newWriteLog() *writeLog {
	return &writeLog{created: map[string][]string{}, deleted: map[string][]string{}}
}

func (l *writeLog) add(to map[string][]string, ns, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	to[ns] = append(to[ns], name)
}

// take returns the pods created and deleted in a namespace since the last take, each by name.
func (l *writeLog) take(ns string) (created, deleted []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	created, deleted = l.created[ns], l.deleted[ns]
	delete(l.created, ns)
	delete(l.deleted, ns)
	sort.Strings(created)
	sort.Strings(deleted)
	return nonNil(created), nonNil(deleted)
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// tracker is the fake API server's store as one writer sees it: it gives every object it
// writes a new resourceVersion and every new object a uid, as the API server does
// (Volcano's job controller ignores an update whose resourceVersion did not change, and
// tells pods of one name apart by their uids), and, for the controller's writes, logs
// the pods created and deleted.
type tracker struct {
	k8stesting.ObjectTracker
	version *atomic.Int64
	log     *writeLog // nil: the driver's own writes, not logged
}

// traceWrites (VOLCANOLIB_ORACLE_TRACE=1) prints every write to the fake API on standard
// error, with the bubble's time and whether a delayed action made it, for debugging.
var traceWrites = os.Getenv("VOLCANOLIB_ORACLE_TRACE") != ""

func trace(op string, gvr schema.GroupVersionResource, obj runtime.Object, name string) {
	if !traceWrites {
		return
	}
	extra := ""
	switch o := obj.(type) {
	case *batchv1alpha1.Job:
		extra = fmt.Sprintf("%s v%d r%d", o.Status.State.Phase, o.Status.Version, o.Status.RetryCount)
		name = o.Name
	case *v1.Pod:
		extra = string(o.Status.Phase)
		name = o.Name
	case *schedv1beta1.PodGroup:
		extra = string(o.Status.Phase)
		name = o.Name
	}
	fmt.Fprintf(os.Stderr, "%s delayed=%v %s %s %s %s\n", time.Now().Format("15:04:05.000"), inDelayedAction(), op, gvr.Resource, name, extra)
}

func (t *tracker) stamped(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetResourceVersion(strconv.FormatInt(t.version.Add(1), 10))
	}
	return obj
}

func (t *tracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	obj = t.stamped(obj)
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetUID() == "" {
		// The API server gives every new object a uid of its own: the job controller
		// tells a pod from the one it replaces by it.
		accessor.SetUID(types.UID("uid-" + accessor.GetResourceVersion()))
	}
	trace("create", gvr, obj, "")
	if pod, ok := obj.(*v1.Pod); ok && pod.Status.Phase == "" {
		pod.Status.Phase = v1.PodPending // the API server's default
	}
	err := t.ObjectTracker.Create(gvr, obj, ns, opts...)
	if err == nil && t.log != nil && gvr == podsResource {
		if accessor, aerr := meta.Accessor(obj); aerr == nil {
			t.log.add(t.log.created, ns, accessor.GetName())
		}
	}
	return err
}

func (t *tracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	trace("update", gvr, obj, "")
	return t.ObjectTracker.Update(gvr, t.stamped(obj), ns, opts...)
}

func (t *tracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	trace("patch", gvr, obj, "")
	return t.ObjectTracker.Patch(gvr, t.stamped(obj), ns, opts...)
}

func (t *tracker) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	trace("delete", gvr, nil, name)
	err := t.ObjectTracker.Delete(gvr, ns, name, opts...)
	if err == nil && t.log != nil && gvr == podsResource {
		t.log.add(t.log.deleted, ns, name)
	}
	return err
}
