package jobsim

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"unsafe"

	"k8s.io/client-go/util/workqueue"

	"volcano.sh/volcano/pkg/controllers/framework"
)

// Volcano's job controller handles its requests in a worker, one at a time, but runs a
// policy's delayed action (a timeout) in a goroutine of its own, beside the worker. On a
// real cluster which of the two sees the other's writes first is a race. The oracle
// settles it one way, the way volcanolib's controller is written: a delayed action runs
// to its end before the worker takes the requests its writes raised, and the worker
// takes a request only once every write made so far has been delivered to the
// controller's watches and handlers.

// takeRequestsWhenIdle makes the job controller's workers wait, each time they take a
// request from their queue, until everything else in the bubble is blocked. The queues
// are a field of the controller that Volcano does not export, reached through reflect.
func takeRequestsWhenIdle(c framework.Controller, quiet func()) error {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("the job controller is a %T, not a pointer to a struct", c)
	}
	field := v.Elem().FieldByName("queueList")
	if !field.IsValid() {
		return fmt.Errorf("the job controller has no queueList field")
	}
	queues, ok := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface().([]workqueue.TypedRateLimitingInterface[any])
	if !ok {
		return fmt.Errorf("the job controller's queueList is a %s", field.Type())
	}
	for i := range queues {
		queues[i] = idleQueue{queues[i], quiet}
	}
	return nil
}

type idleQueue struct {
	workqueue.TypedRateLimitingInterface[any]
	quiet func()
}

func (q idleQueue) Get() (any, bool) {
	item, shutdown := q.TypedRateLimitingInterface.Get()
	if !shutdown {
		q.quiet()
	}
	return item, shutdown
}

// inDelayedAction says whether the calling goroutine runs one of the controller's delayed actions.
func inDelayedAction() bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		frame, more := frames.Next()
		if strings.Contains(frame.Function, ".AddDelayActionForJob.") {
			return true
		}
		if !more {
			return false
		}
	}
}
