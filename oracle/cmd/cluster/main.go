// Command cluster runs a Kubernetes control plane for tests and for people: an
// embedded etcd and kube-apiserver in one process, on loopback ports, with
// RBAC and Node authorization, a ServiceAccount token issuer, the default
// admission plugins, and Volcano's CRDs installed from a directory of CRD
// manifests; and, unless --controllers=none, some of kube-controller-manager's
// controllers (see defaultControllers). It writes an admin kubeconfig, prints
// `ready` on stdout once requests are served, and stops on SIGTERM or SIGINT.
//
// Its state (etcd's data, the certificates and keys, the ports) lives in
// --data-dir when given, and is reused when that directory already holds a
// cluster: the same server comes back, on the same ports, with the same data
// and credentials. Without --data-dir the state goes in a temporary
// directory removed at exit.
//
// Lines printed on stdout, in this order:
//
//	etcd http://127.0.0.1:PORT        etcd's client URL (its JSON gateway serves /v3/kv/compaction)
//	apiserver https://127.0.0.1:PORT  the API server
//	ready
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// ports are the loopback ports of one cluster, kept in the data directory so
// that a restart serves on the same ones.
type ports struct {
	APIServer  int `json:"apiserver"`
	EtcdClient int `json:"etcdClient"`
	EtcdPeer   int `json:"etcdPeer"`
}

type settings struct {
	kubeconfig    string
	dataDir       string
	crdDir        string
	auditLog      string
	port          int
	etcdPort      int
	verbose       bool
	apiserverArgs []string
	controllers   []string
}

func main() {
	s := settings{}
	flag.StringVar(&s.kubeconfig, "kubeconfig", "", "write an admin kubeconfig to this file (required)")
	flag.StringVar(&s.dataDir, "data-dir", "", "keep etcd's data, the credentials and the ports here, and reuse them when present (default: a temporary directory removed at exit)")
	flag.StringVar(&s.crdDir, "crd-dir", "", "install every CustomResourceDefinition manifest (*.yaml) of this directory at start")
	flag.StringVar(&s.auditLog, "audit-log", "", "write an audit log (JSON lines, one per request, metadata only) to this file")
	flag.IntVar(&s.port, "port", 0, "the API server's port (0: a free one, or the one the data directory recorded)")
	flag.IntVar(&s.etcdPort, "etcd-port", 0, "etcd's client port (0: a free one, or the one the data directory recorded)")
	flag.BoolVar(&s.verbose, "verbose", false, "show the API server's and etcd's informational logs")
	flag.Func("apiserver-arg", "one more kube-apiserver flag, as --name=value (repeatable)", func(v string) error {
		s.apiserverArgs = append(s.apiserverArgs, v)
		return nil
	})
	controllers := flag.String("controllers", defaultControllers, "kube-controller-manager's controllers to run, comma-separated (names or aliases); none: no controller")
	flag.Parse()
	if s.kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cluster: --kubeconfig is required")
		os.Exit(2)
	}
	var err error
	if s.controllers, err = parseControllers(*controllers); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(2)
	}
	if err := run(s); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
}

func run(s settings) (err error) {
	configureLogs(s.verbose)
	defer func() {
		if err != nil {
			started(true)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	dir := s.dataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "cluster-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	p, err := choosePorts(filepath.Join(dir, "ports.json"), s.port, s.etcdPort)
	if err != nil {
		return err
	}
	creds, err := loadOrMakeCredentials(filepath.Join(dir, "pki"))
	if err != nil {
		return err
	}

	etcd, err := startEtcd(filepath.Join(dir, "etcd"), p, s.verbose)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", p.EtcdClient)
	fmt.Printf("etcd %s\n", etcdURL)

	args, err := apiserverFlags(s, dir, creds, p, etcdURL)
	if err != nil {
		return err
	}
	serverCtx, stopServer := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runAPIServer(serverCtx, args) }()
	stopAll := func() error {
		stopServer()
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			return errors.New("the API server did not stop within 60 s")
		}
	}

	host := fmt.Sprintf("https://127.0.0.1:%d", p.APIServer)
	admin := &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: creds.caPEM, CertData: creds.adminCertPEM, KeyData: creds.adminKeyPEM,
		},
		QPS: 100, Burst: 200,
	}
	if err := waitReady(ctx, admin, done); err != nil {
		_ = stopAll()
		return err
	}
	fmt.Printf("apiserver %s\n", host)
	if err := setUp(ctx, admin, s.crdDir); err != nil {
		_ = stopAll()
		return err
	}
	if err := writeKubeconfig(s.kubeconfig, host, "admin", creds.caPEM, creds.adminCertPEM, creds.adminKeyPEM); err != nil {
		_ = stopAll()
		return err
	}
	if len(s.controllers) != 0 {
		stopControllers, err := startControllers(creds, dir, host, s.controllers)
		if err != nil {
			_ = stopAll()
			return err
		}
		stopServerOnly := stopAll
		stopAll = func() error {
			stopControllers()
			return stopServerOnly()
		}
	}
	started(false)
	fmt.Println("ready")

	select {
	case <-ctx.Done():
	case err := <-done:
		return fmt.Errorf("the API server stopped: %v", err)
	}
	return stopAll()
}

// configureLogs keeps only errors on stderr unless verbose.
func configureLogs(verbose bool) {
	if verbose {
		return
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("legacy_stderr_threshold_behavior", "false")
	klog.SetOutputBySeverity("INFO", io.Discard)
	klog.SetOutputBySeverity("WARNING", io.Discard)
	klog.SetOutputBySeverity("ERROR", errorsOnly{})
	klog.SetOutputBySeverity("FATAL", errorsOnly{})
}

// errorsOnly passes the API server's error lines to stderr. Until the
// cluster is ready it holds them: a fresh cluster's components report each
// other missing while they start (a namespace not made yet), which is noise
// unless the start fails, when they are printed. It drops one line printed
// at every start because no endpoint reconciler runs (the control plane's
// address is a loopback one, which a Service's endpoints refuse); and, once
// the cluster is stopping, the controllers' reports of their requests
// cancelled.
type errorsOnly struct{}

var startLog = struct {
	sync.Mutex
	started  bool
	stopping bool
	held     bytes.Buffer
}{}

func (errorsOnly) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("Found stale data, removed previous endpoints")) {
		return len(p), nil
	}
	startLog.Lock()
	defer startLog.Unlock()
	if startLog.stopping && bytes.Contains(p, []byte("context canceled")) {
		return len(p), nil
	}
	if !startLog.started {
		return startLog.held.Write(p)
	}
	return os.Stderr.Write(p)
}

// stopping drops the errors of requests cancelled by the stop from now on.
func stopping() {
	startLog.Lock()
	defer startLog.Unlock()
	startLog.stopping = true
}

// started passes errors through from now on; failed prints the held ones.
func started(failed bool) {
	startLog.Lock()
	defer startLog.Unlock()
	if failed {
		_, _ = os.Stderr.Write(startLog.held.Bytes())
	}
	startLog.held.Reset()
	startLog.started = true
}

func choosePorts(file string, apiserver, etcdClient int) (ports, error) {
	var p ports
	if data, err := os.ReadFile(file); err == nil {
		if err := json.Unmarshal(data, &p); err != nil {
			return p, fmt.Errorf("%s: %w", file, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return p, err
	}
	if apiserver != 0 {
		p.APIServer = apiserver
	}
	if etcdClient != 0 {
		p.EtcdClient = etcdClient
	}
	for _, port := range []*int{&p.APIServer, &p.EtcdClient, &p.EtcdPeer} {
		if *port == 0 {
			free, err := freePort()
			if err != nil {
				return p, err
			}
			*port = free
		}
	}
	data, _ := json.Marshal(p)
	return p, os.WriteFile(file, data, 0o600)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startEtcd(dir string, p ports, verbose bool) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "cluster"
	cfg.Dir = dir
	client := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(p.EtcdClient)}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(p.EtcdPeer)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// A test cluster: its data needs to outlive a process, not a machine.
	cfg.UnsafeNoFsync = true
	cfg.LogOutputs = []string{"stderr"}
	if !verbose {
		// etcd logs its listeners' closing as errors when it stops.
		cfg.LogLevel = "fatal"
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("not ready within 60 s")
	}
}

func apiserverFlags(s settings, dir string, c *credentials, p ports, etcdURL string) ([]string, error) {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.APIServer),
		"--tls-cert-file=" + c.file("serving.crt"),
		"--tls-private-key-file=" + c.file("serving.key"),
		"--client-ca-file=" + c.file("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.file("sa.key"),
		"--service-account-signing-key-file=" + c.file("sa.key"),
		"--api-audiences=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		// New nodes would be tainted not-ready until the node lifecycle
		// controller (of a controller-manager, which does not run here)
		// lifts the taint: they would never take a pod.
		"--disable-admission-plugins=TaintNodesByCondition",
		"--cert-dir=" + filepath.Join(dir, "pki"),
	}
	if s.auditLog != "" {
		policy := filepath.Join(dir, "audit-policy.yaml")
		// Metadata of every request, once it has started answering (a watch)
		// or has answered (everything else).
		// The controller-manager's requests are left out.
		text := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n" +
			"- level: None\n  users: [\"" + controllerManagerUser + "\"]\n- level: Metadata\n"
		if err := os.WriteFile(policy, []byte(text), 0o600); err != nil {
			return nil, err
		}
		args = append(args,
			"--audit-policy-file="+policy,
			"--audit-log-path="+s.auditLog,
			"--audit-log-mode=blocking",
			"--audit-log-format=json",
		)
	}
	return append(args, s.apiserverArgs...), nil
}

// startControllers runs kube-controller-manager's controllers with their
// own identity (a kubeconfig in dir) and returns what stops them.
func startControllers(creds *credentials, dir, host string, controllers []string) (func(), error) {
	cert, key, err := creds.clientCert("controller-manager", controllerManagerUser, "system:masters")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "controller-manager.kubeconfig")
	if err := writeKubeconfig(kubeconfig, host, controllerManagerUser, creds.caPEM, cert, key); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, err := runControllerManager(ctx, kubeconfig, controllers)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		stopping()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}, nil
}

// runAPIServer runs kube-apiserver in this process until ctx ends.
func runAPIServer(ctx context.Context, args []string) error {
	o := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range o.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := o.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	completed, err := o.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return fmt.Errorf("kube-apiserver flags: %v", errors.Join(errs...))
	}
	return app.Run(ctx, completed)
}

func waitReady(ctx context.Context, cfg *rest.Config, done <-chan error) error {
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(probe)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		status := 0
		client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		if status == 200 {
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("the API server stopped while starting: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("the API server was not ready within 120 s")
		}
	}
}

// setUp installs the CRDs and what a controller-manager would otherwise
// provide and the tests need: the default namespace's ServiceAccount.
func setUp(ctx context.Context, cfg *rest.Config, crdDir string) error {
	if crdDir != "" {
		if err := installCRDs(ctx, cfg, crdDir); err != nil {
			return err
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := client.CoreV1().ServiceAccounts("default").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		// The namespace itself is made by the API server shortly after it is ready.
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return fmt.Errorf("creating the default ServiceAccount: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
