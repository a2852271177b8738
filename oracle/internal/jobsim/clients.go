package jobsim

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	batchclient "volcano.sh/apis/pkg/client/clientset/versioned/typed/batch/v1alpha1"
	busclient "volcano.sh/apis/pkg/client/clientset/versioned/typed/bus/v1alpha1"
	schedclient "volcano.sh/apis/pkg/client/clientset/versioned/typed/scheduling/v1beta1"
)

// The controller's clients: the fake ones, except that each write the controller's own
// watches see (pods, PodGroups, Jobs, Commands) returns only once those watches have
// delivered it and the controller's handlers have run. Every write is then seen at
// once, in the order it was made, which is the model volcanolib's controller follows
// (and one of the orders a real API server may give). Without it, which of a Job's
// status and its PodGroup's deletion the controller sees first after a restart is
// left to the goroutine scheduler.

type kubeClient struct {
	*kubefake.Clientset
	sync func()
}

func (c kubeClient) CoreV1() corev1.CoreV1Interface {
	return coreV1{c.Clientset.CoreV1(), c.sync}
}

type coreV1 struct {
	corev1.CoreV1Interface
	sync func()
}

func (c coreV1) Pods(ns string) corev1.PodInterface { return pods{c.CoreV1Interface.Pods(ns), c.sync} }

type pods struct {
	corev1.PodInterface
	sync func()
}

func (p pods) Create(ctx context.Context, pod *v1.Pod, opts metav1.CreateOptions) (*v1.Pod, error) {
	defer p.sync()
	return p.PodInterface.Create(ctx, pod, opts)
}

func (p pods) Update(ctx context.Context, pod *v1.Pod, opts metav1.UpdateOptions) (*v1.Pod, error) {
	defer p.sync()
	return p.PodInterface.Update(ctx, pod, opts)
}

func (p pods) UpdateStatus(ctx context.Context, pod *v1.Pod, opts metav1.UpdateOptions) (*v1.Pod, error) {
	defer p.sync()
	return p.PodInterface.UpdateStatus(ctx, pod, opts)
}

func (p pods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*v1.Pod, error) {
	defer p.sync()
	return p.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}

func (p pods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	defer p.sync()
	return p.PodInterface.Delete(ctx, name, opts)
}

type vcClient struct {
	*vcfake.Clientset
	sync func()
}

func (c vcClient) BatchV1alpha1() batchclient.BatchV1alpha1Interface {
	return batchV1alpha1{c.Clientset.BatchV1alpha1(), c.sync}
}

func (c vcClient) SchedulingV1beta1() schedclient.SchedulingV1beta1Interface {
	return schedulingV1beta1{c.Clientset.SchedulingV1beta1(), c.sync}
}

func (c vcClient) BusV1alpha1() busclient.BusV1alpha1Interface {
	return busV1alpha1{c.Clientset.BusV1alpha1(), c.sync}
}

type batchV1alpha1 struct {
	batchclient.BatchV1alpha1Interface
	sync func()
}

func (c batchV1alpha1) Jobs(ns string) batchclient.JobInterface {
	return jobs{c.BatchV1alpha1Interface.Jobs(ns), c.sync}
}

type jobs struct {
	batchclient.JobInterface
	sync func()
}

func (j jobs) Update(ctx context.Context, job *batchv1alpha1.Job, opts metav1.UpdateOptions) (*batchv1alpha1.Job, error) {
	defer j.sync()
	return j.JobInterface.Update(ctx, job, opts)
}

func (j jobs) UpdateStatus(ctx context.Context, job *batchv1alpha1.Job, opts metav1.UpdateOptions) (*batchv1alpha1.Job, error) {
	defer j.sync()
	return j.JobInterface.UpdateStatus(ctx, job, opts)
}

type schedulingV1beta1 struct {
	schedclient.SchedulingV1beta1Interface
	sync func()
}

func (c schedulingV1beta1) PodGroups(ns string) schedclient.PodGroupInterface {
	return podGroups{c.SchedulingV1beta1Interface.PodGroups(ns), c.sync}
}

type podGroups struct {
	schedclient.PodGroupInterface
	sync func()
}

func (p podGroups) Create(ctx context.Context, pg *schedv1beta1.PodGroup, opts metav1.CreateOptions) (*schedv1beta1.PodGroup, error) {
	defer p.sync()
	return p.PodGroupInterface.Create(ctx, pg, opts)
}

func (p podGroups) Update(ctx context.Context, pg *schedv1beta1.PodGroup, opts metav1.UpdateOptions) (*schedv1beta1.PodGroup, error) {
	defer p.sync()
	return p.PodGroupInterface.Update(ctx, pg, opts)
}

func (p podGroups) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	defer p.sync()
	return p.PodGroupInterface.Delete(ctx, name, opts)
}

type busV1alpha1 struct {
	busclient.BusV1alpha1Interface
	sync func()
}

func (c busV1alpha1) Commands(ns string) busclient.CommandInterface {
	return commands{c.BusV1alpha1Interface.Commands(ns), c.sync}
}

type commands struct {
	busclient.CommandInterface
	sync func()
}

func (c commands) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	defer c.sync()
	return c.CommandInterface.Delete(ctx, name, opts)
}
