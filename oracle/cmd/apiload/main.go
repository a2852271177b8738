// Command apiload is the live benchmarks' Go helper: it sends requests to an
// API server as fast as the server takes them, and watches objects change,
// with a client whose own cost is small next to the server's.
//
//	apiload post --kubeconfig FILE [--workers N] [FILE|-]
//	apiload watch --kubeconfig FILE --path /api/v1/pods --field spec.nodeName [--field-selector SELECTOR]
//
// post reads one request a line, as JSON:
//
//	{"method": "POST", "path": "/api/v1/namespaces/default/pods", "body": {...}, "status": {...}}
//
// and sends them from --workers goroutines, in any order. With "status", a
// created object's status is then written with a merge patch of its status
// subresource (creating drops a pod's status). At the end it prints one JSON
// object: requests sent, seconds, requests per second, the count of each
// answer's HTTP status and the first few refusals.
//
// watch lists the objects under --path, then watches them, and prints a line
//
//	SECONDS NAMESPACE/NAME VALUE
//
// (of the objects --field-selector selects, when given)
// whenever the value of --field (a dotted path into the object) differs
// from the one printed before for that object (the first non-empty value
// counts; SECONDS is the Unix time of arrival). A line "synced SECONDS"
// follows the list. It stops on SIGTERM or SIGINT.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const usage = `usage: apiload post --kubeconfig FILE [--workers N] [FILE|-]
       apiload watch --kubeconfig FILE --path PATH --field DOTTED.PATH [--field-selector SELECTOR]
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "post":
		err = post(os.Args[2:])
	case "watch":
		err = watch(os.Args[2:])
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiload %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// server is one API server reached with a kubeconfig's credentials, without client-side rate limits.
type server struct {
	host   string
	client *http.Client
}

func connect(kubeconfig string, connections int) (*server, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	if t, ok := transport.(*http.Transport); ok {
		t.MaxIdleConnsPerHost = connections
	}
	return &server{host: strings.TrimSuffix(cfg.Host, "/"), client: &http.Client{Transport: transport}}, nil
}

func (s *server) do(ctx context.Context, method, path, contentType string, body []byte) (int, []byte, error) {
	request, err := http.NewRequestWithContext(ctx, method, s.host+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	request.Header.Set("Content-Type", contentType)
	request.Header.Set("Accept", "application/json")
	answer, err := s.client.Do(request)
	if err != nil {
		return 0, nil, err
	}
	defer answer.Body.Close()
	data, err := io.ReadAll(answer.Body)
	return answer.StatusCode, data, err
}

// ---------------------------------------------------------------------- post

type line struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
	Status json.RawMessage `json:"status"`
}

type tally struct {
	sync.Mutex
	codes  map[int]int
	errors []string
	sent   int
}

func (t *tally) note(code int, what string, data []byte) {
	t.Lock()
	defer t.Unlock()
	t.sent++
	t.codes[code]++
	if (code == 0 || code >= 300) && len(t.errors) < 5 {
		t.errors = append(t.errors, fmt.Sprintf("%s: %d %s", what, code, bytes.TrimSpace(data)))
	}
}

func post(args []string) error {
	flags := flag.NewFlagSet("post", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "the API server's kubeconfig")
	workers := flags.Int("workers", 16, "requests in flight")
	_ = flags.Parse(args)
	input := io.Reader(os.Stdin)
	if flags.NArg() > 0 && flags.Arg(0) != "-" {
		file, err := os.Open(flags.Arg(0))
		if err != nil {
			return err
		}
		defer file.Close()
		input = file
	}
	srv, err := connect(*kubeconfig, *workers)
	if err != nil {
		return err
	}
	ctx := context.Background()
	lines := make(chan line, 4**workers)
	counts := &tally{codes: map[int]int{}}
	var group sync.WaitGroup
	for range *workers {
		group.Add(1)
		go func() {
			defer group.Done()
			for l := range lines {
				send(ctx, srv, l, counts)
			}
		}()
	}
	started := time.Now()
	scanner := bufio.NewScanner(input)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	var readErr error
	for scanner.Scan() {
		var l line
		if err := json.Unmarshal(scanner.Bytes(), &l); err != nil {
			readErr = fmt.Errorf("line %q: %v", scanner.Text(), err)
			break
		}
		lines <- l
	}
	close(lines)
	group.Wait()
	if readErr == nil {
		readErr = scanner.Err()
	}
	if readErr != nil {
		return readErr
	}
	seconds := time.Since(started).Seconds()
	codes := map[string]int{}
	for code, n := range counts.codes {
		codes[fmt.Sprint(code)] = n
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"requests": counts.sent, "seconds": seconds, "per_second": float64(counts.sent) / seconds,
		"codes": codes, "errors": counts.errors, "workers": *workers,
	})
}

func send(ctx context.Context, srv *server, l line, counts *tally) {
	method := l.Method
	if method == "" {
		method = http.MethodPost
	}
	contentType := "application/json"
	if method == http.MethodPatch {
		contentType = "application/merge-patch+json"
	}
	code, data, err := srv.do(ctx, method, l.Path, contentType, l.Body)
	if err != nil {
		counts.note(0, l.Path, []byte(err.Error()))
		return
	}
	counts.note(code, l.Path, data)
	if len(l.Status) == 0 || code >= 300 {
		return
	}
	var created struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &created); err != nil {
		counts.note(0, l.Path, []byte(err.Error()))
		return
	}
	path := l.Path + "/" + created.Metadata.Name + "/status"
	patch, _ := json.Marshal(map[string]json.RawMessage{"status": l.Status})
	code, data, err = srv.do(ctx, http.MethodPatch, path, "application/merge-patch+json", patch)
	if err != nil {
		code, data = 0, []byte(err.Error())
	}
	counts.note(code, path, data)
}

// ---------------------------------------------------------------------- watch

type object struct {
	Metadata struct {
		Namespace       string `json:"namespace"`
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

type watcher struct {
	srv    *server
	path   string
	query  url.Values
	field  []string
	out    *bufio.Writer
	values map[string]string
}

func watch(args []string) error {
	flags := flag.NewFlagSet("watch", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "the API server's kubeconfig")
	path := flags.String("path", "/api/v1/pods", "the collection to watch")
	field := flags.String("field", "spec.nodeName", "the dotted path of the value to follow")
	selector := flags.String("field-selector", "", "only the objects this field selector selects")
	_ = flags.Parse(args)
	srv, err := connect(*kubeconfig, 2)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	w := &watcher{srv: srv, path: *path, field: strings.Split(*field, "."), values: map[string]string{},
		out: bufio.NewWriter(os.Stdout), query: url.Values{}}
	if *selector != "" {
		w.query.Set("fieldSelector", *selector)
	}
	defer w.out.Flush()
	version := ""
	for ctx.Err() == nil {
		if version == "" {
			if version, err = w.list(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "apiload watch: list: %v\n", err)
				time.Sleep(time.Second)
				continue
			}
		}
		version, err = w.follow(ctx, version)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "apiload watch: %v\n", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// list reads every object once and returns the list's resourceVersion.
func (w *watcher) list(ctx context.Context) (string, error) {
	code, data, err := w.srv.do(ctx, http.MethodGet, w.path+"?"+w.query.Encode(), "", nil)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("%d %s", code, data)
	}
	var answer struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return "", err
	}
	now := time.Now()
	for _, item := range answer.Items {
		w.seen(now, item)
	}
	fmt.Fprintf(w.out, "synced %.6f\n", float64(now.UnixMicro())/1e6)
	w.out.Flush()
	return answer.Metadata.ResourceVersion, nil
}

// follow watches from a resourceVersion until the watch ends; it returns where to go on
// from ("" when the history is gone and a new list is needed).
func (w *watcher) follow(ctx context.Context, version string) (string, error) {
	query := url.Values{"watch": {"1"}, "resourceVersion": {version}, "allowWatchBookmarks": {"true"},
		"timeoutSeconds": {"3600"}}
	for key, values := range w.query {
		query[key] = values
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, w.srv.host+w.path+"?"+query.Encode(), nil)
	if err != nil {
		return version, err
	}
	request.Header.Set("Accept", "application/json")
	answer, err := w.srv.client.Do(request)
	if err != nil {
		return version, err
	}
	defer answer.Body.Close()
	if answer.StatusCode == http.StatusGone {
		return "", nil
	}
	if answer.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(answer.Body)
		return version, fmt.Errorf("watch: %d %s", answer.StatusCode, data)
	}
	decoder := json.NewDecoder(answer.Body)
	for {
		var event struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := decoder.Decode(&event); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return version, nil
			}
			return version, err
		}
		now := time.Now()
		var meta object
		_ = json.Unmarshal(event.Object, &meta)
		switch event.Type {
		case "ERROR":
			return "", nil // expired: list again
		case "DELETED":
			delete(w.values, meta.Metadata.Namespace+"/"+meta.Metadata.Name)
		case "ADDED", "MODIFIED":
			w.seen(now, event.Object)
		}
		if meta.Metadata.ResourceVersion != "" {
			version = meta.Metadata.ResourceVersion
		}
	}
}

func (w *watcher) seen(now time.Time, raw json.RawMessage) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	key := fmt.Sprintf("%v/%v", meta["namespace"], meta["name"])
	if meta["namespace"] == nil {
		key = fmt.Sprintf("/%v", meta["name"])
	}
	var value any = obj
	for _, part := range w.field {
		m, ok := value.(map[string]any)
		if !ok {
			value = nil
			break
		}
		value = m[part]
	}
	text := ""
	if value != nil {
		text = fmt.Sprint(value)
	}
	if text == w.values[key] {
		return
	}
	w.values[key] = text
	fmt.Fprintf(w.out, "%.6f %s %s\n", float64(now.UnixMicro())/1e6, key, text)
	w.out.Flush()
}
