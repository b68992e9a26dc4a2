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

// pageCluster is what the page shows of one cluster.
type pageCluster struct {
	Found       bool     `json:"found"`
	LeaderRows  []string `json:"leaderRows"`
	Terms       []string `json:"terms"`
	Roles       []string `json:"roles"`
	Leader      string   `json:"leader"`
	Term        string   `json:"term"`
	BannerClass string   `json:"bannerClass"`
	Problems    string   `json:"problems"`
	Status      string   `json:"status"`
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
	c := startCluster(t, "page", 3)
	c.healthy(t, 0)
	s := serve(t, c.nodes[0], observer.WithSampleInterval(100*time.Millisecond))
	_, err := chromedp.Run(tab, chromedp.Navigate(s.URL()))
	require.NoError(t, err)

	t.Run("the page shows exactly one leader, at the cluster's term", func(t *testing.T) {
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
				slices.Equal(got.Terms, []string{term, term, term}) &&
				got.BannerClass == "banner ok"
		}, settle, poll, "the page never showed one leader at the API's term with no disagreement: page %+v, API leader %q term %d", got, want.Leader, want.Term)
		assert.Equal(t, "live", got.Status)
		screenshot(t, tab, "observer-page.png")
	})

	t.Run("a member that goes down is shown unreadable with a warning, live", func(t *testing.T) {
		down := 2
		if string(c.nodes[down].Name()) == c.healthy(t, 0).Leader {
			down = 1
		}
		c.nodes[down].StopForce()
		var got pageCluster
		require.Eventually(t, func() bool {
			var err error
			got, err = showPage(tab, "page")
			return err == nil && got.Found && len(got.Roles) == 3 && got.Roles[down] == "unreadable"
		}, settle, poll, "the page never showed the stopped member: %+v", got)
		assert.Contains(t, got.Problems, observer.ProblemUnreachable)
		assert.NotEqual(t, "banner ok", got.BannerClass)
		screenshot(t, tab, "observer-page-member-down.png")
	})
}
