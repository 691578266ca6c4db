package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/internal/logfile"
	"github.com/quiver-mcp/quiver/proxy"
	"github.com/quiver-mcp/quiver/registry"
	"github.com/quiver-mcp/quiver/telemetry"
)

// operating are serve's flags for the people who run it: the metrics
// listener and where and how the log is written (README, "Operating
// quiver").
type operating struct {
	metrics   string
	logFormat string
	logFile   string
}

func (o *operating) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.metrics, "metrics", "", "serve /healthz, /readyz and /metrics on this address")
	fs.StringVar(&o.logFormat, "log-format", "text", "log line format: text or json")
	fs.StringVar(&o.logFile, "log-file", "", "write the log to this file (rotated by size) instead of stderr")
}

// logger is serve's logger: text or JSON lines (the same fields either
// way) on stderr or in a rotating file. proxy.New puts its redacting
// handler in front of it. The closer closes the file.
func (o *operating) logger(e *env, c *common) (*slog.Logger, io.Closer, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("%w: --log-level %q: use debug, info, warn or error", errUsage, c.logLevel)
	}
	var w io.Writer = e.stderr
	var closer io.Closer = io.NopCloser(nil)
	if o.logFile != "" {
		f, err := logfile.Open(o.logFile, logfile.DefaultMaxBytes, logfile.DefaultKeep)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, closer = f, f
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), closer, nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), closer, nil
	}
	closer.Close()
	return nil, nil, fmt.Errorf("%w: --log-format %q: use text or json", errUsage, o.logFormat)
}

// metricsSection picks servers.yaml's metrics: section:
//
//	metrics:
//	  listen: 0.0.0.0:9090
type metricsSection struct {
	Metrics struct {
		Listen yaml.Node `yaml:"listen"`
	} `yaml:"metrics"`
	Rest map[string]yaml.Node `yaml:",inline"`
}

// metricsAddr is the metrics listener's address: --metrics, else
// metrics.listen, else "" (none).
func (o *operating) metricsAddr(cfg *registry.Config) (string, error) {
	if o.metrics != "" {
		return o.metrics, nil
	}
	var sec metricsSection
	if err := cfg.DecodeSections(&sec); err != nil {
		return "", err
	}
	return listenFrom(cfg, &sec.Metrics.Listen, "metrics.listen", "127.0.0.1:9090")
}

// opsFront is serve's metrics listener and the telemetry behind it.
type opsFront struct {
	ln  net.Listener // nil without --metrics
	tel *telemetry.Telemetry
}

// startOperating listens for the metrics (before anything starts, as the
// MCP listener does) and builds the telemetry: metrics with a listener,
// traces when the OTEL_* variables ask for them.
func startOperating(ctx context.Context, e *env, addr string) (*opsFront, error) {
	var o opsFront
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("--metrics: listen: %w", err)
		}
		o.ln = ln
	}
	tel, err := telemetry.New(ctx, telemetry.Options{Metrics: o.ln != nil, Getenv: e.getenv})
	if err != nil {
		if o.ln != nil {
			o.ln.Close()
		}
		return nil, err
	}
	o.tel = tel
	return &o, nil
}

// observer is the proxy's observer: nil (no cost at all) when neither
// metrics nor traces are on.
func (o *opsFront) observer() proxy.Observer {
	if !o.tel.Enabled() {
		return nil
	}
	return o.tel
}

// serve serves /healthz, /readyz and /metrics for p until ctx ends; the
// function it returns waits for that. Ready means the ledger answers and
// every configured server has started or failed.
func (o *opsFront) serve(ctx context.Context, p *proxy.Server, log *slog.Logger) (wait func()) {
	if o.ln == nil {
		return func() {}
	}
	o.tel.SetServers(func() map[string]bool {
		up := map[string]bool{}
		cat := p.Catalog()
		if cat == nil {
			return up
		}
		for _, s := range cat.Servers {
			up[s.Name] = s.State == registry.StateUp
		}
		return up
	})
	ledger := func(ctx context.Context) string {
		if l := p.Ledger(); l != nil {
			if err := l.Ping(ctx); err != nil {
				return "the ledger (" + err.Error() + ")"
			}
		}
		return ""
	}
	servers := func(context.Context) string {
		select {
		case <-p.Ready():
			return ""
		default:
		}
		var starting []string
		if cat := p.Catalog(); cat != nil {
			for _, s := range cat.Servers {
				if s.State == registry.StateStarting {
					starting = append(starting, s.Name)
				}
			}
		}
		if len(starting) == 0 {
			return "the servers to start or fail"
		}
		return "servers to start or fail: " + strings.Join(starting, ", ")
	}
	srv := &http.Server{
		Handler:           o.tel.Handler(ledger, servers),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       defaultReadTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	log.Info("serving metrics", "url", "http://"+o.ln.Addr().String()+"/metrics")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serveUntil(ctx, srv, o.ln, time.Second); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	return func() { <-done }
}

// close sends the spans still buffered.
func (o *opsFront) close(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.tel.Shutdown(ctx); err != nil {
		log.Warn("traces: the last spans were not sent", "err", err)
	}
}
