//! How many resource operations may be in flight, per AWS service, adapting to throttling.
//!
//! Each service (the `AWS::<Service>` part of a type) has a lane with a limit. A lane starts
//! at [`Concurrency::initial`] and grows by one per operation that finished without being
//! throttled (slow start) until the first throttling answer; from then on it grows by one per
//! limit's worth of finished operations (additive increase) and halves on a throttling answer
//! (multiplicative decrease), at most once per [`DECREASE_EVERY`] so one burst of answers to
//! calls sent together counts once. No lane exceeds the ceiling: an explicit `--concurrency`,
//! or [`ADAPTIVE_CEILING`].
//!
//! Throttling is learnt where it is seen, inside a provider call: the operation runs in a
//! [`scope`] and [`throttled`] (called by the retry loop and the Cloud Control client) finds
//! its lane there. Outside a scope it does nothing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// The most operations in flight when no `--concurrency` is given.
pub const ADAPTIVE_CEILING: usize = 128;

/// Where an adaptive lane starts.
pub const ADAPTIVE_START: usize = 16;

/// A lane halves at most once in this window.
pub const DECREASE_EVERY: Duration = Duration::from_millis(500);

/// The user's choice of concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    /// Start at [`ADAPTIVE_START`] per service and adapt, up to [`ADAPTIVE_CEILING`].
    Adaptive,
    /// Start at this many and adapt below it: never more in flight (`--concurrency N`).
    AtMost(usize),
}

impl Concurrency {
    /// From the `--concurrency` flag.
    pub fn from_flag(flag: Option<usize>) -> Concurrency {
        match flag {
            Some(n) => Concurrency::AtMost(n.max(1)),
            None => Concurrency::Adaptive,
        }
    }

    /// The most operations in flight at once, all services together.
    pub fn ceiling(self) -> usize {
        match self {
            Concurrency::Adaptive => ADAPTIVE_CEILING,
            Concurrency::AtMost(n) => n,
        }
    }

    /// Where a lane starts.
    pub fn initial(self) -> usize {
        match self {
            Concurrency::Adaptive => ADAPTIVE_START,
            Concurrency::AtMost(n) => n,
        }
    }
}

#[derive(Debug)]
struct Lane {
    limit: f64,
    in_flight: usize,
    slow_start: bool,
    last_decrease: Option<Instant>,
    throttled: u64,
}

/// The lanes of one run (shared by the stacks it deploys: AWS throttles per account).
#[derive(Debug)]
pub struct Lanes {
    concurrency: Concurrency,
    lanes: Mutex<HashMap<String, Lane>>,
    freed: tokio::sync::Notify,
}

/// What one lane looks like now.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneFigures {
    /// The current limit (whole operations).
    pub limit: usize,
    /// Operations in flight.
    pub in_flight: usize,
    /// Throttling answers seen.
    pub throttled: u64,
}

impl Lanes {
    /// Lanes for `concurrency`.
    pub fn new(concurrency: Concurrency) -> Arc<Lanes> {
        Arc::new(Lanes {
            concurrency,
            lanes: Mutex::new(HashMap::new()),
            freed: tokio::sync::Notify::new(),
        })
    }

    /// The ceiling of every lane, and of the whole run.
    pub fn ceiling(&self) -> usize {
        self.concurrency.ceiling()
    }

    fn with_lane<T>(&self, service: &str, f: impl FnOnce(&mut Lane) -> T) -> T {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        let lane = lanes.entry(service.to_string()).or_insert_with(|| Lane {
            limit: self.concurrency.initial() as f64,
            in_flight: 0,
            slow_start: true,
            last_decrease: None,
            throttled: 0,
        });
        f(lane)
    }

    /// Takes a place in `service`'s lane if it has one free.
    pub fn try_start(&self, service: &str) -> bool {
        self.with_lane(service, |lane| {
            let free = lane.in_flight < (lane.limit.floor() as usize).max(1);
            if free {
                lane.in_flight += 1;
            }
            free
        })
    }

    /// Gives the place back; an operation that was not throttled grows the lane.
    pub fn finish(&self, service: &str, was_throttled: bool) {
        let ceiling = self.ceiling() as f64;
        self.with_lane(service, |lane| {
            lane.in_flight = lane.in_flight.saturating_sub(1);
            if !was_throttled {
                let step = if lane.slow_start {
                    1.0
                } else {
                    1.0 / lane.limit
                };
                lane.limit = (lane.limit + step).min(ceiling);
            }
        });
        self.freed.notify_waiters();
    }

    /// Waits until some lane gives a place back, or `at_most` (a place given back between a
    /// caller's check and this wait would otherwise be missed).
    pub async fn freed(&self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.freed.notified()).await;
    }

    /// A throttling answer for `service`: the lane halves (once per [`DECREASE_EVERY`]).
    pub fn throttled(&self, service: &str) {
        let now = Instant::now();
        self.with_lane(service, |lane| {
            lane.throttled += 1;
            lane.slow_start = false;
            if lane
                .last_decrease
                .is_none_or(|last| now.duration_since(last) >= DECREASE_EVERY)
            {
                lane.limit = (lane.limit / 2.0).max(1.0);
                lane.last_decrease = Some(now);
                tracing::debug!("{service}: throttled; at most {} at once", lane.limit);
            }
        });
    }

    /// The figures of `service`'s lane.
    pub fn figures(&self, service: &str) -> LaneFigures {
        self.with_lane(service, |lane| LaneFigures {
            limit: lane.limit.floor() as usize,
            in_flight: lane.in_flight,
            throttled: lane.throttled,
        })
    }
}

/// The lane of a resource type: its service (`AWS::SQS::Queue` -> `AWS::SQS`).
pub fn service_of(resource_type: &str) -> String {
    let mut parts = resource_type.splitn(3, "::");
    match (parts.next(), parts.next()) {
        (Some(vendor), Some(service)) => format!("{vendor}::{service}"),
        _ => resource_type.to_string(),
    }
}

#[derive(Clone)]
struct Scope {
    lanes: Arc<Lanes>,
    service: String,
    throttled: Arc<std::sync::atomic::AtomicBool>,
}

tokio::task_local! {
    static SCOPE: Scope;
}

/// Runs `operation` in `service`'s lane (the place is already taken with
/// [`Lanes::try_start`]); gives the place back when it ends.
pub async fn scope<T>(lanes: Arc<Lanes>, service: String, operation: impl Future<Output = T>) -> T {
    let scope = Scope {
        lanes: Arc::clone(&lanes),
        service: service.clone(),
        throttled: Arc::default(),
    };
    let flag = Arc::clone(&scope.throttled);
    let result = SCOPE.scope(scope, operation).await;
    lanes.finish(&service, flag.load(std::sync::atomic::Ordering::Relaxed));
    result
}

/// The running operation was answered with throttling (a no-op outside a [`scope`]).
pub fn throttled() {
    let _ = SCOPE.try_with(|scope| {
        scope
            .throttled
            .store(true, std::sync::atomic::Ordering::Relaxed);
        scope.lanes.throttled(&scope.service);
    });
}

/// Tells the running operation's lane about throttling answers seen by an AWS SDK client
/// (the SDK retries them itself, so the caller never sees them).
#[derive(Debug, Default)]
pub struct ThrottlingInterceptor;

impl aws_smithy_runtime_api::client::interceptors::Intercept for ThrottlingInterceptor {
    fn name(&self) -> &'static str {
        "cdkd-throttling"
    }

    fn read_after_deserialization(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::AfterDeserializationInterceptorContextRef<'_>,
        _components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let response = context.response();
        let status = response.status().as_u16();
        let body = response.body().bytes().unwrap_or_default();
        if is_throttling(status, body) {
            throttled();
        }
        Ok(())
    }
}

/// Whether an HTTP answer is AWS saying "slow down".
fn is_throttling(status: u16, body: &[u8]) -> bool {
    if status == 429 {
        return true;
    }
    if status != 400 && status != 503 {
        return false;
    }
    let text = String::from_utf8_lossy(&body[..body.len().min(512)]);
    [
        "Throttling",
        "TooManyRequests",
        "SlowDown",
        "RequestLimitExceeded",
        "Rate exceeded",
    ]
    .iter()
    .any(|code| text.contains(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_grows_by_one_per_success_until_throttled_then_halves_and_grows_slowly() {
        let lanes = Lanes::new(Concurrency::Adaptive);
        assert!(lanes.try_start("AWS::SQS"));
        lanes.finish("AWS::SQS", false);
        assert_eq!(lanes.figures("AWS::SQS").limit, ADAPTIVE_START + 1);
        lanes.throttled("AWS::SQS");
        let halved = ((ADAPTIVE_START + 1) as f64 / 2.0).floor() as usize;
        assert_eq!(lanes.figures("AWS::SQS").limit, halved);
        // A second answer in the same burst does not halve again.
        lanes.throttled("AWS::SQS");
        assert_eq!(lanes.figures("AWS::SQS").limit, halved);
        assert_eq!(lanes.figures("AWS::SQS").throttled, 2);
        // Additive increase: one per limit's worth of successes.
        for _ in 0..halved {
            assert!(lanes.try_start("AWS::SQS"));
            lanes.finish("AWS::SQS", false);
        }
        assert_eq!(lanes.figures("AWS::SQS").limit, halved + 1);
        // Other services are untouched.
        assert_eq!(lanes.figures("AWS::SNS").limit, ADAPTIVE_START);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lane_halves_again_after_the_window_and_never_below_one() {
        let lanes = Lanes::new(Concurrency::AtMost(4));
        for _ in 0..5 {
            lanes.throttled("AWS::IAM");
            tokio::time::advance(DECREASE_EVERY).await;
        }
        assert_eq!(lanes.figures("AWS::IAM").limit, 1);
        assert!(lanes.try_start("AWS::IAM"));
        assert!(!lanes.try_start("AWS::IAM"), "the limit of one is full");
    }

    #[test]
    fn an_explicit_concurrency_is_where_lanes_start_and_what_they_never_exceed() {
        let lanes = Lanes::new(Concurrency::AtMost(3));
        for _ in 0..3 {
            assert!(lanes.try_start("AWS::SNS"));
        }
        assert!(!lanes.try_start("AWS::SNS"));
        for _ in 0..3 {
            lanes.finish("AWS::SNS", false);
        }
        assert_eq!(lanes.figures("AWS::SNS").limit, 3);
    }

    #[tokio::test]
    async fn throttling_inside_a_scope_reaches_its_lane_and_outside_does_nothing() {
        let lanes = Lanes::new(Concurrency::Adaptive);
        throttled();
        assert!(lanes.try_start("AWS::SSM"));
        scope(Arc::clone(&lanes), "AWS::SSM".into(), async { throttled() }).await;
        let figures = lanes.figures("AWS::SSM");
        assert_eq!(figures.throttled, 1);
        assert_eq!(figures.in_flight, 0);
        assert_eq!(
            figures.limit,
            ADAPTIVE_START / 2,
            "a throttled finish does not grow"
        );
    }

    #[test]
    fn throttling_answers_are_recognised_in_every_protocol() {
        assert!(is_throttling(
            400,
            br#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#
        ));
        assert!(is_throttling(503, b"<Error><Code>SlowDown</Code></Error>"));
        assert!(is_throttling(400, b"<Code>Throttling</Code>"));
        assert!(is_throttling(429, b""));
        assert!(!is_throttling(400, br#"{"__type":"ValidationException"}"#));
        assert!(!is_throttling(200, b"Throttling"));
        assert_eq!(service_of("AWS::SQS::Queue"), "AWS::SQS");
        assert_eq!(service_of("Custom::Thing"), "Custom::Thing");
    }
}
