package observer_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/leader"
	"github.com/regent-go/regent/observer"
)

// findChromium returns the Chromium binary: $REGENT_CHROMIUM, else chromium
// on PATH, else /usr/bin/chromium; empty when there is none.
func findChromium() string {
	if p := os.Getenv("REGENT_CHROMIUM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// browser starts headless Chromium with a fresh profile and returns a tab;
// the browser ends with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := findChromium()
	if path == "" {
		if os.Getenv("CI") == "" {
			keySkipOnSearchPath(t)
			t.Skip("chromium is not installed (apt-get install chromium chromium-driver); CI installs it and runs this test")
		}
		t.Fatal("chromium is not installed, and under CI this test must run: .ci/run installs it")
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 720),
	)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return ctx
}

// keySkipOnSearchPath makes the go tool's test cache key a skip on the
// directories Chromium would be found in, so installing it reruns the test.
// The cache records files a test opens or stats only inside the module, but
// it records every directory a test changes into with its modification time
// (which changes when a file is added to it), so the test visits each one.
func keySkipOnSearchPath(t *testing.T) {
	dirs := append(filepath.SplitList(os.Getenv("PATH")), "/usr/bin")
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) {
			continue
		}
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			t.Chdir(dir)
		}
	}
}

// pageCluster is what the page shows of one cluster.
type pageCluster struct {
	Found       bool        `json:"found"`
	LeaderRows  []string    `json:"leaderRows"`
	Terms       []string    `json:"terms"`
	Roles       []string    `json:"roles"`
	Leader      string      `json:"leader"`
	Term        string      `json:"term"`
	BannerClass string      `json:"bannerClass"`
	Problems    string      `json:"problems"`
	Status      string      `json:"status"`
	Gone        []string    `json:"gone"`
	Events      []pageEvent `json:"events"`
	Tenures     []string    `json:"tenures"`
	Elections   []string    `json:"elections"`
	Updated     string      `json:"updated"`
}

// pageEvent is one entry of the page's leadership timeline.
type pageEvent struct {
	Kind   string `json:"kind"`
	Leader string `json:"leader"`
	Text   string `json:"text"`
}

const readPage = `((CLUSTER) => {
  const s = document.querySelector('section.cluster[data-cluster="' + CLUSTER + '"]');
  const status = document.getElementById('status').dataset.state;
  if (!s) return {found: false, status};
  const rows = Array.from(s.querySelectorAll('tbody tr'));
  const banner = s.querySelector('.banner');
  return {
    found: true,
    leaderRows: rows.filter(r => r.dataset.role === 'leader').map(r => r.dataset.node),
    terms: rows.map(r => r.dataset.term),
    roles: rows.map(r => r.dataset.role),
    leader: s.dataset.leader,
    term: s.dataset.term,
    bannerClass: banner ? banner.className : '',
    problems: banner ? (banner.dataset.problems || '') : '',
    status,
    gone: rows.filter(r => r.dataset.role === 'gone').map(r => r.dataset.node),
    events: Array.from(s.querySelectorAll('.event')).map(e => ({kind: e.dataset.kind, leader: e.dataset.leader, text: e.textContent})),
    tenures: Array.from(s.querySelectorAll('.tenure:not(.gap)')).map(e => e.dataset.leader + '@' + e.dataset.term),
    elections: Array.from(s.querySelectorAll('td.elections')).map(e => e.textContent),
    updated: document.getElementById('updated').textContent,
  };
})`

// showPage evaluates readPage for cluster in the tab. It does not touch t,
// so conditions polled by require.Eventually can use it.
func showPage(tab context.Context, cluster string) (pageCluster, error) {
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[pageCluster](readPage+"("+jsString(cluster)+")"))
}

func jsString(s string) string {
	return "'" + s + "'" // test cluster IDs are plain words
}

// screenshot saves the tab as a PNG under $REGENT_ARTIFACTS (or the temp
// directory) and logs where.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv("REGENT_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "regent-artifacts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ctx, cancel := context.WithTimeout(tab, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot of the observer page: %s", path)
}

func TestThePageInHeadlessChromium(t *testing.T) {
	tab := browser(t)
	c := startCluster(t, "page", 5)
	// The page must outlive the leader the test kills: the observer runs on
	// a node that does not lead, and hands leadership away if it comes to.
	watcher := (c.nodeIndex(c.healthy(t, 0).Leader) + 1) % len(c.nodes)
	s := serve(t, c.nodes[watcher], observer.WithSampleInterval(100*time.Millisecond))
	_, err := chromedp.Run(tab, chromedp.Navigate(s.URL()))
	require.NoError(t, err)

	t.Run("the page shows exactly one leader, at the cluster's term, and its election on the timeline", func(t *testing.T) {
		// The page and the API are read one after the other, so poll until
		// both show the cluster at rest and agree.
		var got pageCluster
		var want observer.ClusterReport
		require.Eventually(t, func() bool {
			var err error
			if got, err = showPage(tab, "page"); err != nil || !got.Found {
				return false
			}
			if err := fetchJSON(s.URL()+"api/clusters/page", http.StatusOK, &want); err != nil || want.Leader == "" || len(want.Problems) != 0 {
				return false
			}
			term := strconv.FormatUint(want.Term, 10)
			return slices.Equal(got.LeaderRows, []string{want.Leader}) &&
				got.Leader == want.Leader && got.Term == term &&
				slices.Equal(got.Terms, []string{term, term, term, term, term}) &&
				got.BannerClass == "banner ok" &&
				slices.Contains(got.Tenures, want.Leader+"@"+term)
		}, settle, poll, "the page never showed one leader at the API's term with no disagreement")
		assert.Equal(t, "live", got.Status)
		assert.NotContains(t, []string{"never", "Invalid Date", ""}, got.Updated, "the header says when the page's reading ended")
		assert.True(t, slices.ContainsFunc(got.Events, func(e pageEvent) bool { return e.Kind == observer.EventElected }),
			"the timeline shows the first election: %+v", got.Events)
		for _, e := range got.Elections {
			assert.NotContains(t, e, " 1 leadership changes", "one change is singular")
			assert.NotContains(t, e, " 1 elections", "one election is singular")
		}
		screenshot(t, tab, "observer-page.png")
	})

	t.Run("killing the leader puts a failover on the timeline and leaves the dead member visible as gone", func(t *testing.T) {
		var before observer.ClusterReport
		require.Eventually(t, func() bool {
			if err := fetchJSON(s.URL()+"api/clusters/page", http.StatusOK, &before); err != nil || before.Leader == "" {
				return false
			}
			if c.nodeIndex(before.Leader) == watcher {
				_ = leader.StepDownLeader(c.nodes[watcher], c.pids[watcher]) // refused only if it stopped leading meanwhile
				return false
			}
			return true
		}, settle, poll, "no leader other than the observer's node")
		dead := before.Leader
		c.lb.Kill(c.nodeIndex(dead))
		var got pageCluster
		var want observer.ClusterReport
		require.Eventually(t, func() bool {
			var err error
			if got, err = showPage(tab, "page"); err != nil || !got.Found {
				return false
			}
			if err := fetchJSON(s.URL()+"api/clusters/page", http.StatusOK, &want); err != nil || want.Leader == "" || want.Leader == dead {
				return false
			}
			return slices.ContainsFunc(got.Events, func(e pageEvent) bool { return e.Kind == observer.EventFailover && e.Leader == want.Leader }) &&
				slices.Equal(got.Gone, []string{dead})
		}, settle, poll, "the page never showed the failover from %s", dead)
		i := slices.IndexFunc(got.Events, func(e pageEvent) bool { return e.Kind == observer.EventFailover })
		assert.Contains(t, got.Events[i].Text, "failover: "+dead+" → "+want.Leader)
		assert.Contains(t, got.Events[i].Text, "without a leader")
		screenshot(t, tab, "observer-page-failover.png")

		var timeline observer.Timeline
		getJSON(t, s.URL()+"api/clusters/page/timeline", http.StatusOK, &timeline)
		assert.True(t, slices.ContainsFunc(timeline.Events, func(e observer.TimelineEvent) bool {
			return e.Kind == observer.EventFailover && e.Previous == dead && e.Leader == want.Leader
		}), "the JSON timeline has the failover too: %+v", timeline.Events)
		require.NotEmpty(t, timeline.Gone)
		assert.Equal(t, dead, timeline.Gone[0].Node)
		assert.False(t, timeline.Gone[0].Since.IsZero())
	})
}
