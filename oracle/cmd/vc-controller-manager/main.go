// Command vc-controller-manager is Volcano's controller manager at the
// release go.mod pins, built from Volcano's own packages: its options, its
// app.Run and every controller it registers (job, podgroup, queue, ...).
// Nothing here changes what they do; this file only wires the packages
// together so that the benchmarks and tests can run Volcano's controllers
// beside volcanolib controllers. Build it with tools/volcano.
//
//	vc-controller-manager --kubeconfig FILE [any flag of Volcano's controller manager]
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	leaderflags "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/controller-manager/app"
	"volcano.sh/volcano/cmd/controller-manager/app/options"
	"volcano.sh/volcano/pkg/controllers/framework"
	"volcano.sh/volcano/pkg/util"
	"volcano.sh/volcano/pkg/version"

	// The controllers register themselves when imported.
	_ "volcano.sh/volcano/pkg/controllers/colocationconfig"
	_ "volcano.sh/volcano/pkg/controllers/cronjob"
	_ "volcano.sh/volcano/pkg/controllers/garbagecollector"
	_ "volcano.sh/volcano/pkg/controllers/hypernode"
	_ "volcano.sh/volcano/pkg/controllers/job"
	_ "volcano.sh/volcano/pkg/controllers/jobflow"
	_ "volcano.sh/volcano/pkg/controllers/jobtemplate"
	_ "volcano.sh/volcano/pkg/controllers/podgroup"
	_ "volcano.sh/volcano/pkg/controllers/queue"
	_ "volcano.sh/volcano/pkg/controllers/sharding"
)

func main() {
	klog.InitFlags(nil)
	var names []string
	framework.ForeachController(func(c framework.Controller) { names = append(names, c.Name()) })
	sort.Strings(names)
	opts := options.NewServerOption()
	flags := pflag.CommandLine
	opts.AddFlags(flags, names)
	utilfeature.DefaultMutableFeatureGate.AddFlag(flags)
	util.LeaderElectionDefault(&opts.LeaderElection)
	opts.LeaderElection.ResourceName = "vc-controller-manager"
	leaderflags.BindLeaderElectionFlags(&opts.LeaderElection, flags)
	cliflag.InitFlags()
	if opts.PrintVersion {
		version.PrintVersionAndExit()
	}
	if err := opts.CheckOptionOrDie(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer klog.Flush()
	if err := app.Run(opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
