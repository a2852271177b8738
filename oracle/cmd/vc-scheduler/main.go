// Command vc-scheduler is Volcano's scheduler (vc-scheduler) at the release
// go.mod pins, built from Volcano's own packages: its options, its app.Run,
// its actions and plugins. Nothing here changes what it does; this file only
// wires the packages together so that the benchmarks can run Volcano's
// scheduler beside volcanolib serve against the same kind of API server.
// Build it with tools/volcano (benchmarks/live.py does).
//
//	vc-scheduler --kubeconfig FILE --scheduler-conf FILE [any flag of Volcano's scheduler]
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	leaderflags "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/scheduler/app"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	"volcano.sh/volcano/pkg/util"
	"volcano.sh/volcano/pkg/version"

	// The actions and plugins register themselves when imported.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	_ "volcano.sh/volcano/pkg/scheduler/util/assert"
)

func main() {
	klog.InitFlags(nil)
	opts := options.NewServerOption()
	flags := pflag.CommandLine
	opts.AddFlags(flags)
	utilfeature.DefaultMutableFeatureGate.AddFlag(flags)
	util.LeaderElectionDefault(&opts.LeaderElection)
	opts.LeaderElection.ResourceName = util.GenerateComponentName(opts.SchedulerNames)
	leaderflags.BindLeaderElectionFlags(&opts.LeaderElection, flags)
	opts.RegisterOptions()
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
