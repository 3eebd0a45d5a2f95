package issues

import (
	"bytes"
	"container/list"
	"io"
	"net/http"
	"strings"
	"sync"
)

// etagCache makes every GET conditional: it keeps the last answer to
// each URL with its ETag, sends the ETag back as If-None-Match, and turns
// GitHub's 304 Not Modified (which does not count against the rate limit)
// into the kept answer, with the 304's own rate-limit headers. So a poll
// that finds nothing changed costs no requests of the hour's allowance
// (docs/queue.md, "The poll's cost"). Answers are kept up to etagBytes in
// all, the least recently used dropped first.
type etagCache struct {
	base http.RoundTripper

	mu    sync.Mutex
	byKey map[string]*list.Element // of *etagEntry
	lru   list.List                // front: most recently used
	bytes int
}

type etagEntry struct {
	key, etag string
	header    http.Header
	body      []byte
}

// etagBytes bounds the kept answers; etagMaxBody is the largest kept.
const (
	etagBytes   = 32 << 20
	etagMaxBody = 4 << 20
)

func newETagCache(base http.RoundTripper) *etagCache {
	if base == nil {
		base = http.DefaultTransport
	}
	return &etagCache{base: base, byKey: map[string]*list.Element{}}
}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" {
		return c.base.RoundTrip(req)
	}
	key := req.URL.String() + "\x00" + req.Header.Get("Accept")
	e := c.get(key)
	if e != nil {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", e.etag)
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && e != nil:
		resp.Body.Close()
		h := e.header.Clone()
		for k, v := range resp.Header {
			if strings.HasPrefix(k, "X-Ratelimit-") || k == "Date" || k == "Etag" {
				h[k] = v
			}
		}
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
		resp.Header = h
		resp.Body = io.NopCloser(bytes.NewReader(e.body))
		resp.ContentLength = int64(len(e.body))
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(io.LimitReader(resp.Body, etagMaxBody+1))
		rest := resp.Body
		if err != nil || len(body) > etagMaxBody {
			// Not kept: hand the answer on as it came.
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), rest), rest}
			return resp, nil
		}
		rest.Close()
		c.put(&etagEntry{key: key, etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body})
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

func (c *etagCache) get(key string) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*etagEntry)
}

func (c *etagCache) put(e *etagEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.byKey[e.key]; old != nil {
		c.bytes -= len(old.Value.(*etagEntry).body)
		c.lru.Remove(old)
	}
	c.byKey[e.key] = c.lru.PushFront(e)
	c.bytes += len(e.body)
	for c.bytes > etagBytes && c.lru.Len() > 1 {
		last := c.lru.Back()
		le := last.Value.(*etagEntry)
		c.bytes -= len(le.body)
		delete(c.byKey, le.key)
		c.lru.Remove(last)
	}
}
