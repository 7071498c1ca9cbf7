//! Prometheus metrics: request counts and latencies per service, route template and status,
//! served as text at `/metrics`.

use actors::cluster::Ownership;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::IntoResponse;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The metrics of one process.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    /// Events waiting in the outboxes, refreshed by the relay supervisor.
    pub outbox_backlog: IntGauge,
    admissions_refused: IntCounterVec,
    cluster: Arc<OnceLock<ClusterMetrics>>,
}

/// The events cluster as this node sees it, read from the membership at each scrape.
struct ClusterMetrics {
    owner: Ownership,
    shards_owned: IntGauge,
    renewals: IntCounter,
    fenced: IntCounter,
    handovers: IntCounterVec,
}

impl ClusterMetrics {
    fn sync(&self) {
        let counts = self.owner.counts();
        self.shards_owned.set(self.owner.shards_held() as i64);
        catch_up(&self.renewals, counts.renewals);
        catch_up(&self.fenced, self.owner.fenced());
        catch_up(
            &self.handovers.with_label_values(&["claimed"]),
            counts.claimed,
        );
        catch_up(
            &self.handovers.with_label_values(&["handed_over"]),
            counts.handed_over,
        );
        catch_up(&self.handovers.with_label_values(&["lost"]), counts.lost);
    }
}

/// Raises a counter to `total` (counters only go up).
fn catch_up(counter: &IntCounter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

impl Metrics {
    /// Registers bilet's metrics in a fresh registry.
    pub fn new() -> Metrics {
        let registry = Registry::new_custom(Some("bilet".into()), None).unwrap_or_default();
        let requests = IntCounterVec::new(
            Opts::new("http_requests_total", "HTTP requests answered"),
            &["service", "method", "route", "status"],
        )
        .unwrap_or_else(|_| unreachable_metric());
        let latency = HistogramVec::new(
            HistogramOpts::new("http_request_duration_seconds", "HTTP request latency").buckets(
                vec![
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                ],
            ),
            &["service", "method", "route"],
        )
        .unwrap_or_else(|_| unreachable_metric());
        let outbox_backlog =
            IntGauge::new("outbox_backlog", "Events not yet confirmed by the broker")
                .unwrap_or_else(|_| unreachable_metric());
        let _ = registry.register(Box::new(requests.clone()));
        let _ = registry.register(Box::new(latency.clone()));
        let admissions_refused = IntCounterVec::new(
            Opts::new(
                "admissions_refused_total",
                "Registrations refused for their waiting-room admission",
            ),
            &["reason"],
        )
        .unwrap_or_else(|_| unreachable_metric());
        let _ = registry.register(Box::new(outbox_backlog.clone()));
        let _ = registry.register(Box::new(admissions_refused.clone()));
        Metrics {
            registry,
            requests,
            latency,
            outbox_backlog,
            admissions_refused,
            cluster: Arc::new(OnceLock::new()),
        }
    }

    /// Counts a registration refused for its admission (`missing`, `forged`, `expired`,
    /// `other_account`, `other_event`).
    pub fn count_admission_refused(&self, reason: &str) {
        self.admissions_refused.with_label_values(&[reason]).inc();
    }

    /// Reports the events cluster of this node: shards owned, lease renewals, fenced commits
    /// and hand-overs (`bilet_cluster_*`).
    pub fn follow_cluster(&self, owner: Ownership) {
        let gauge = |name: &str, help: &str| {
            IntGauge::new(name, help).unwrap_or_else(|_| unreachable_metric())
        };
        let counter = |name: &str, help: &str| {
            IntCounter::new(name, help).unwrap_or_else(|_| unreachable_metric())
        };
        let metrics = ClusterMetrics {
            owner,
            shards_owned: gauge("cluster_shards_owned", "Shards whose lease this node holds"),
            renewals: counter(
                "cluster_lease_renewals_total",
                "Rounds in which this node renewed its leases",
            ),
            fenced: counter(
                "cluster_fenced_commits_total",
                "Writes the database refused because this node's lease had moved on",
            ),
            handovers: IntCounterVec::new(
                Opts::new(
                    "cluster_handovers_total",
                    "Shards this node claimed, handed over, or lost",
                ),
                &["kind"],
            )
            .unwrap_or_else(|_| unreachable_metric()),
        };
        self.register(Box::new(metrics.shards_owned.clone()));
        self.register(Box::new(metrics.renewals.clone()));
        self.register(Box::new(metrics.fenced.clone()));
        self.register(Box::new(metrics.handovers.clone()));
        let _ = self.cluster.set(metrics);
    }

    /// Adds metrics kept elsewhere (the notification send queue's counters).
    pub fn register(&self, collector: Box<dyn prometheus::core::Collector>) {
        if let Err(e) = self.registry.register(collector) {
            tracing::warn!(error = %e, "metric not registered");
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        if let Some(cluster) = self.cluster.get() {
            cluster.sync();
        }
        let mut buffer = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buffer);
        String::from_utf8(buffer).unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn unreachable_metric<T>() -> T {
    // Metric names and label sets above are constants that prometheus accepts; reaching this
    // means the code itself was changed wrongly.
    panic!("invalid metric definition")
}

/// The method as a label: the standard ones by name, any other (a client may invent
/// methods of any length) as `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// What a request is counted under, taken before it is handled.
pub struct Counted {
    method: &'static str,
    /// A route template, never the path as sent: labels must not grow with what clients send.
    route: Option<MatchedPath>,
}

impl Counted {
    /// The method and route template of `request`.
    pub fn of(request: &Request) -> Counted {
        Counted {
            method: method_label(request.method()),
            route: request.extensions().get::<MatchedPath>().cloned(),
        }
    }
}

impl Metrics {
    /// Counts one answered request of the router named `service`.
    pub fn record(
        &self,
        service: &'static str,
        counted: Counted,
        status: StatusCode,
        elapsed: Duration,
    ) {
        let route = counted.route.as_ref().map_or("unmatched", |p| p.as_str());
        self.requests
            .with_label_values(&[service, counted.method, route, status.as_str()])
            .inc();
        self.latency
            .with_label_values(&[service, counted.method, route])
            .observe(elapsed.as_secs_f64());
    }
}

/// `GET /metrics`.
pub async fn serve(State(metrics): State<Metrics>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        metrics.render(),
    )
}
