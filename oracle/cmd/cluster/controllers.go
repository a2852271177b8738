package main

import (
	"context"
	"fmt"
	"strings"

	kcm "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// defaultControllers are the kube-controller-manager controllers the
// cluster runs unless --controllers says otherwise: what Volcano's flow
// needs of a controller-manager. The garbage collector deletes what a
// deleted owner owned (and finishes a Foreground deletion, as Volcano's TTL
// asks for); the ReplicaSet, Deployment and StatefulSet controllers make
// their pods; the ServiceAccount controller gives each namespace its
// `default` ServiceAccount; the namespace controller finishes a namespace's
// deletion.
const defaultControllers = "garbagecollector,replicaset,deployment,statefulset,serviceaccount,namespace"

// controllerManagerUser is the controller-manager's user name, as in a
// real cluster (its certificate also puts it in system:masters).
const controllerManagerUser = "system:kube-controller-manager"

// parseControllers reads --controllers: names (or aliases) of
// kube-controller-manager's controllers, comma-separated; "" or "none" runs
// none. A name kube-controller-manager does not know is an error.
func parseControllers(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "none" {
		return nil, nil
	}
	known := map[string]bool{}
	for _, name := range kcm.KnownControllers() {
		known[name] = true
	}
	for alias := range kcm.ControllerAliases() {
		known[alias] = true
	}
	var names []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if !known[name] {
			return nil, fmt.Errorf("--controllers: unknown controller %q", name)
		}
		names = append(names, name)
	}
	return names, nil
}

// runControllerManager runs kube-controller-manager's controllers in this
// process until ctx ends, as the user of kubeconfig, without leader
// election and without its HTTP server. It returns at once (the controllers
// start and sync their informers in the background); the channel gets
// Run's error when it stops.
func runControllerManager(ctx context.Context, kubeconfig string, controllers []string) (<-chan error, error) {
	o, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	o.Generic.ClientConnection.Kubeconfig = kubeconfig
	o.Generic.ClientConnection.QPS = 100
	o.Generic.ClientConnection.Burst = 200
	o.Generic.LeaderElection.LeaderElect = false
	o.Generic.Controllers = controllers
	o.SecureServing.BindPort = 0
	config, err := o.Config(ctx, kcm.KnownControllers(), kcm.ControllersDisabledByDefault(), kcm.ControllerAliases())
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- kcm.Run(ctx, config.Complete()) }()
	return done, nil
}
