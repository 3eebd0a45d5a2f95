package kube

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sort"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// BenchmarkAttemptsInFlight: 200 attempts at once against the fake
// API server, each with its pod running and its log streaming; reports
// the driver's heap per attempt in flight and the API calls per attempt
// (informer lists and watches included, shared by all; log streams
// counted apart, one per pod). Reproduce:
//
//	go test -run '^$' -bench AttemptsInFlight -benchtime 1x ./kube/
func BenchmarkAttemptsInFlight(b *testing.B) {
	const n = 200
	for i := 0; i < b.N; i++ {
		c := newCluster(b)
		d := c.driver(c.cfg)
		runtime.GC()
		var before, during runtime.MemStats
		runtime.ReadMemStats(&before)
		res := make(chan Result, n)
		for k := 1; k <= n; k++ {
			a := c.attempt(k, "true")
			a.Phase = fmt.Sprintf("p%d", k)
			go func() { res <- d.Run(context.Background(), a, io.Discard) }()
		}
		jobs := make([]*batchv1.Job, 0, n)
		for len(jobs) < n {
			jobs = append(jobs, <-c.jobs)
		}
		var pipes []*io.PipeWriter
		for _, j := range jobs {
			p := c.createPod(j, j.Name+"-a", nil)
			pipes = append(pipes, c.logs.give(p.Name))
			c.updatePod(p, runningAgent)
		}
		for _, w := range pipes {
			fmt.Fprintln(w, "agent: working") // each stream open and read
		}
		runtime.GC()
		runtime.ReadMemStats(&during)
		for k, j := range jobs {
			pipes[k].Close()
			p := mustPod(c, j.Name+"-a")
			c.updatePod(p, agentEnded(0, "", `{"exit":0,"tip":"","pushed":false}`))
			c.endJob(j.Name, batchv1.JobComplete, "Completed")
		}
		for k := 0; k < n; k++ {
			if r := <-res; r.Reason != "" {
				b.Fatalf("result %+v", r)
			}
		}
		for _, j := range jobs {
			d.Done(context.Background(), j.Name)
		}
		calls := map[string]int{}
		total := 0
		// The test's own writes (the kubelet's, the Job controller's)
		// go to the store, not through the API: these are the driver's.
		for _, a := range c.api.Calls() {
			key := a.Verb + " " + a.Resource
			calls[key]++
			if a.Verb != "log" {
				total++
			}
		}
		keys := make([]string, 0, len(calls))
		for k := range calls {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.Logf("%-14s %d", k, calls[k])
		}
		b.ReportMetric(float64(total)/n, "calls/attempt")
		b.ReportMetric(float64(during.HeapInuse-before.HeapInuse)/n, "heap-B/attempt")
	}
}
