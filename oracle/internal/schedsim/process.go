package schedsim

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/backfill"
	"volcano.sh/volcano/pkg/scheduler/actions/enqueue"
	"volcano.sh/volcano/pkg/scheduler/actions/preempt"
	"volcano.sh/volcano/pkg/scheduler/actions/reclaim"
	"volcano.sh/volcano/pkg/scheduler/actions/shuffle"
	"volcano.sh/volcano/pkg/scheduler/api/devices/ascend/hami"
	"volcano.sh/volcano/pkg/scheduler/api/devices/ascend/mindcluster/ascend310p/vnpu"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/gpushare"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"volcanolib/oracle/internal/scenario"
)

// Volcano is written to schedule for one configuration per process: a few
// plugins keep their switches in package variables, and a bad configuration
// ends the process through klog.Fatal. The oracle runs many scenarios in one
// process, so each starts from the switches a fresh process has, and a fatal
// log line becomes a configuration error of that scenario.

// fatalLog holds what Volcano logged at FATAL severity during the current scenario.
var fatalLog = &lockedBuffer{}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

type fatalExit struct{ code int }

// minWatchBuffer is the fewest events a fake API watch holds.
const minWatchBuffer = 1 << 12

// watchBuffer sizes the fake API's watches for a scenario: between two sessions the cluster
// updates or deletes each pod at most once, and the informer has taken them all before the
// next session, so a watch never holds more events than there are pods (nodes and HyperNodes
// are written before the watches start; a margin stays for good measure).
func watchBuffer(scn *scenario.Scenario) int32 {
	n := 2*len(scn.Pods) + len(scn.Nodes) + len(scn.HyperNodes)
	if n < minWatchBuffer {
		return minWatchBuffer
	}
	return int32(n)
}

func init() {
	// The fake API's watches hold DefaultChanSize events (100) and then stop the process.
	// Each watch allocates its whole buffer, so it is sized per scenario (watchBuffer); this is
	// the size for the rest of the process (the job controller's fake clients).
	watch.DefaultChanSize = minWatchBuffer
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	_ = flags.Set("logtostderr", "false")
	_ = flags.Set("alsologtostderr", "false")
	_ = flags.Set("stderrthreshold", "4") // above FATAL: nothing reaches standard error
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	klog.SetOutputBySeverity("FATAL", fatalLog)
	// VOLCANOLIB_ORACLE_V=N shows Volcano's own log on standard error at verbosity N, for debugging.
	if v := os.Getenv("VOLCANOLIB_ORACLE_V"); v != "" {
		_ = flags.Set("v", v)
		_ = flags.Set("stderrthreshold", "0")
		klog.SetOutput(os.Stderr)
	}
	klog.OsExit = func(code int) { panic(fatalExit{code}) }
}

// resetProcessSwitches puts the plugins' package-level switches back to a fresh process's values,
// and registers new actions: an action is one object per process that keeps the arguments it
// read (preempt's enableTopologyAwarePreemption, say) until a configuration sets them again, so
// a scenario would otherwise run with the arguments an earlier one gave.
func resetProcessSwitches() {
	framework.RegisterAction(reclaim.New())
	framework.RegisterAction(allocate.New())
	framework.RegisterAction(backfill.New())
	framework.RegisterAction(preempt.New())
	framework.RegisterAction(enqueue.New())
	framework.RegisterAction(shuffle.New())
	gpushare.GpuSharingEnable = false
	gpushare.GpuNumberEnable = false
	gpushare.NodeLockEnable = false
	vgpu.VGPUEnable = false
	vgpu.NodeLockEnable = false
	vnpu.AscendMindClusterVNPUEnable = false
	hami.AscendHAMiVNPUEnable = false
	hami.NodeLockEnable = false
	fatalLog.take()
}

// asConfigError turns a klog.Fatal raised while a session ran into the scenario's error.
func asConfigError(recovered any) error {
	if _, ok := recovered.(fatalExit); !ok {
		panic(recovered)
	}
	text := strings.TrimSpace(fatalLog.take())
	lines := strings.Split(text, "\n")
	msg := lines[0]
	if i := strings.Index(msg, "] "); i >= 0 {
		msg = msg[i+2:]
	}
	return &ConfigError{Msg: fmt.Sprintf("Volcano stops on this configuration: %s", msg)}
}
