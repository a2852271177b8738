package scenario

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// What a cluster does to objects before a scheduler sees them, as
// docs/scenario-format.md states it: the kubelet's default pod count, the
// priority admission plugin, the default queue Volcano creates at start.
// The PodGroups of pods that name none and the pods of Volcano Jobs are made
// by Volcano's own controllers (see package controllers).

// KubeletDefaultPods is the pod count a node holds when its status names none.
const KubeletDefaultPods = 110

// DefaultQueue is the queue that always exists.
const DefaultQueue = "default"

// Normalize applies the cluster's defaults to the scenario's objects in place.
func (scn *Scenario) Normalize() {
	for _, node := range scn.Nodes {
		normalizeNode(node)
	}
	scn.fillPriorities()
	for _, pod := range scn.Pods {
		if pod.UID == "" {
			pod.UID = types.UID(pod.Namespace + "-" + pod.Name)
		}
		if pod.Spec.SchedulerName == "" {
			pod.Spec.SchedulerName = v1.DefaultSchedulerName
		}
		if pod.Status.Phase == "" {
			pod.Status.Phase = v1.PodPending
		}
	}
	scn.ensureQueues()
	for _, pg := range scn.PodGroups {
		if pg.Spec.Queue == "" {
			pg.Spec.Queue = DefaultQueue
		}
		if pg.Status.Phase == "" {
			pg.Status.Phase = schedv1beta1.PodGroupPending
		}
	}
}

func normalizeNode(node *v1.Node) {
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	}
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = v1.ResourceList{}
	}
	if _, ok := node.Status.Allocatable[v1.ResourcePods]; !ok {
		if pods, ok := node.Status.Capacity[v1.ResourcePods]; ok {
			node.Status.Allocatable[v1.ResourcePods] = pods.DeepCopy()
		} else {
			node.Status.Allocatable[v1.ResourcePods] = *resource.NewQuantity(KubeletDefaultPods, resource.DecimalSI)
		}
	}
	if node.Status.Capacity == nil {
		node.Status.Capacity = node.Status.Allocatable.DeepCopy()
	}
}

// fillPriorities does what the Priority admission plugin does: a pod that
// names no integer priority gets its PriorityClass's value (or the global
// default's, or 0) and its preemption policy.
func (scn *Scenario) fillPriorities() {
	values := map[string]int32{}
	policies := map[string]*v1.PreemptionPolicy{}
	var globalDefault string
	for _, pc := range scn.PriorityClasses {
		values[pc.Name] = pc.Value
		policies[pc.Name] = pc.PreemptionPolicy
		if pc.GlobalDefault && globalDefault == "" {
			globalDefault = pc.Name
		}
	}
	for _, pod := range scn.Pods {
		class := pod.Spec.PriorityClassName
		if class == "" {
			class = globalDefault
		}
		if pod.Spec.Priority == nil {
			value := values[class]
			if _, ok := values[class]; !ok && class != "" {
				scn.Warnings = append(scn.Warnings, fmt.Sprintf("Pod %s/%s: PriorityClass %q does not exist; priority 0", pod.Namespace, pod.Name, class))
			}
			pod.Spec.Priority = &value
		}
		if pod.Spec.PreemptionPolicy == nil {
			policy := v1.PreemptLowerPriority
			if p := policies[class]; p != nil {
				policy = *p
			}
			pod.Spec.PreemptionPolicy = &policy
		}
	}
}

// ensureQueues adds the queues a Volcano cluster always has, as Volcano's
// scheduler cache creates both at start: `root` (weight 1, not reclaimable,
// Open), the parent of every queue that names none, and `default` (weight 1,
// reclaimable, Open).
func (scn *Scenario) ensureQueues() {
	names := map[string]bool{}
	for _, q := range scn.Queues {
		names[q.Name] = true
		if q.Status.State == "" {
			q.Status.State = schedv1beta1.QueueStateOpen
		}
		if q.Spec.Weight == 0 {
			// The CRD's default weight.
			q.Spec.Weight = 1
		}
	}
	if !names["root"] {
		reclaimable := false
		scn.Queues = append([]*schedv1beta1.Queue{{
			ObjectMeta: metav1.ObjectMeta{Name: "root"},
			Spec:       schedv1beta1.QueueSpec{Weight: 1, Reclaimable: &reclaimable},
			Status:     schedv1beta1.QueueStatus{State: schedv1beta1.QueueStateOpen},
		}}, scn.Queues...)
	}
	if !names[DefaultQueue] {
		reclaimable := true
		scn.Queues = append(scn.Queues, &schedv1beta1.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultQueue},
			Spec:       schedv1beta1.QueueSpec{Weight: 1, Reclaimable: &reclaimable},
			Status:     schedv1beta1.QueueStatus{State: schedv1beta1.QueueStateOpen},
		})
	}
}

// NewestTimestamp is the newest creationTimestamp of the queues, PodGroups
// and pods (the zero time when none has one): the sessions' clock starts one
// second after it.
func (scn *Scenario) NewestTimestamp() time.Time {
	var newest time.Time
	take := func(t metav1.Time) {
		if t.Time.After(newest) {
			newest = t.Time
		}
	}
	for _, q := range scn.Queues {
		take(q.CreationTimestamp)
	}
	for _, pg := range scn.PodGroups {
		take(pg.CreationTimestamp)
	}
	for _, p := range scn.Pods {
		take(p.CreationTimestamp)
	}
	return newest
}

// ShiftTimes moves every creationTimestamp by the same amount so that the
// scenario's clock (one second after its newest timestamp; the Unix epoch
// standing for objects without one) reads now on the wall clock. Order and
// ages stay as written, so plugins that read the clock see what volcanolib's
// simulated clock shows them.
func (scn *Scenario) ShiftTimes(now time.Time) {
	newest := scn.NewestTimestamp()
	simNow := time.Unix(1, 0)
	if !newest.IsZero() {
		simNow = newest.Add(time.Second)
	}
	offset := now.Truncate(time.Second).Sub(simNow)
	shift := func(meta *metav1.ObjectMeta) {
		t := meta.CreationTimestamp.Time
		if t.IsZero() {
			t = time.Unix(0, 0)
		}
		meta.CreationTimestamp = metav1.NewTime(t.Add(offset))
	}
	for _, q := range scn.Queues {
		shift(&q.ObjectMeta)
	}
	for _, pg := range scn.PodGroups {
		shift(&pg.ObjectMeta)
	}
	for _, p := range scn.Pods {
		shift(&p.ObjectMeta)
	}
}
