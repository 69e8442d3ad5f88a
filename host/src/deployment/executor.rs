//! The event-driven DAG executor: a task starts the moment its own dependencies are done (no
//! level barrier), at most `concurrency` at a time and, for a task in a service's lane, when
//! that lane has room ([`Lanes`]: limits per AWS service that adapt to throttling). Ready tasks go
//! longest pole first: the longest remaining critical path (the task's own expected time plus the
//! longest expected chain of tasks that wait for it), so a slow wait starts before quick work
//! nothing waits on and overlaps with the rest; ties (and tasks without expected times) by
//! `priority`, then by id. On the first failure (or a stop request) nothing new
//! starts, work in flight finishes, and every task that did not run is reported skipped. It
//! knows nothing of AWS: a task is an id, an optional lane and a future.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::provisioning::concurrency::{self, Lanes};

/// One unit of work and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The id (a logical id).
    pub id: String,
    /// Ids that must finish first (ids not in the task list are ignored).
    pub dependencies: BTreeSet<String>,
    /// Among ready tasks with equal remaining critical paths, higher runs first.
    pub priority: usize,
    /// How long it is expected to take (zero when unknown).
    pub expected: Duration,
    /// The lane it runs in (its AWS service), when the executor has lanes.
    pub lane: Option<String>,
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and succeeded.
    Done,
    /// It ran and failed; the task's error, as shown.
    Failed(String),
    /// It never ran; the reason says why.
    Skipped(String),
}

/// Runs tasks in dependency order.
#[derive(Debug, Clone)]
pub struct Executor {
    /// The most tasks in flight at once.
    pub concurrency: usize,
    /// Per-service limits for tasks that name a lane (shared with other executors of the run).
    pub lanes: Option<Arc<Lanes>>,
}

impl Executor {
    /// At most `concurrency` tasks at once, no lanes.
    pub fn fixed(concurrency: usize) -> Executor {
        Executor {
            concurrency,
            lanes: None,
        }
    }

    /// Lanes' ceiling at once, each task within its lane's limit.
    pub fn in_lanes(lanes: Arc<Lanes>) -> Executor {
        Executor {
            concurrency: lanes.ceiling(),
            lanes: Some(lanes),
        }
    }

    /// Whether `task` may start now (taking its lane's place if so).
    fn admit(&self, task: &Task) -> bool {
        match (&self.lanes, &task.lane) {
            (Some(lanes), Some(lane)) => lanes.try_start(lane),
            _ => true,
        }
    }

    /// Runs every task through `work`; `stop` is checked before each dispatch.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    pub async fn run<'t, F, Fut, E>(
        &self,
        tasks: &'t [Task],
        stop: &tokio::sync::watch::Sender<bool>,
        work: F,
    ) -> BTreeMap<String, Outcome>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let known: BTreeSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        let by_id: BTreeMap<&str, &Task> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
        let mut waiting: BTreeMap<&str, usize> = BTreeMap::new();
        let mut dependents: BTreeMap<&str, Vec<&Task>> = BTreeMap::new();
        let remaining = remaining_paths(tasks, &known);
        let key = |task: &'t Task| {
            (
                remaining[task.id.as_str()],
                task.priority,
                Reverse(task.id.as_str()),
            )
        };
        let mut ready: BinaryHeap<(Duration, usize, Reverse<&str>)> = BinaryHeap::new();
        for task in tasks {
            let count = task
                .dependencies
                .iter()
                .filter(|d| known.contains(d.as_str()))
                .count();
            for dependency in task
                .dependencies
                .iter()
                .filter(|d| known.contains(d.as_str()))
            {
                dependents
                    .entry(dependency.as_str())
                    .or_default()
                    .push(task);
            }
            waiting.insert(task.id.as_str(), count);
            if count == 0 {
                ready.push(key(task));
            }
        }
        let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
        let mut running = FuturesUnordered::new();
        let mut stopped: Option<String> = None;
        loop {
            // Tasks whose lane is full stay ready; lower-priority tasks of other lanes go first.
            let mut held = Vec::new();
            while stopped.is_none() && running.len() < self.concurrency.max(1) {
                if *stop.borrow() {
                    stopped = Some("the run was interrupted".into());
                    break;
                }
                let Some(entry) = ready.pop() else {
                    break;
                };
                let task = by_id[entry.2 .0];
                if !self.admit(task) {
                    held.push(entry);
                    continue;
                }
                let id = task.id.clone();
                let future = work(id.clone());
                let lane = self.lanes.clone().zip(task.lane.clone());
                running.push(async move {
                    let result = match lane {
                        Some((lanes, service)) => concurrency::scope(lanes, service, future).await,
                        None => future.await,
                    };
                    (id, result)
                });
            }
            let any_held = !held.is_empty();
            ready.extend(held);
            let next = match (&self.lanes, running.is_empty()) {
                (_, true) if stopped.is_some() || !any_held => break,
                // Every ready task waits for a lane that other work of the run holds.
                (Some(lanes), true) => {
                    lanes.freed(Duration::from_millis(50)).await;
                    continue;
                }
                (Some(lanes), false) if any_held => {
                    tokio::select! {
                        next = running.next() => next,
                        _ = lanes.freed(Duration::from_millis(50)) => continue,
                    }
                }
                _ => running.next().await,
            };
            let Some((id, result)) = next else {
                break;
            };
            match result {
                Ok(()) => {
                    for dependent in dependents.get(id.as_str()).into_iter().flatten() {
                        let count = waiting
                            .get_mut(dependent.id.as_str())
                            .expect("dependents are tasks");
                        *count -= 1;
                        if *count == 0 {
                            ready.push(key(dependent));
                        }
                    }
                    outcomes.insert(id, Outcome::Done);
                }
                Err(error) => {
                    stopped.get_or_insert_with(|| format!("{id} failed"));
                    outcomes.insert(id, Outcome::Failed(error.to_string()));
                }
            }
        }
        let reason = stopped.unwrap_or_else(|| "a dependency did not finish".into());
        for task in tasks {
            outcomes
                .entry(task.id.clone())
                .or_insert_with(|| Outcome::Skipped(reason.clone()));
        }
        outcomes
    }
}

/// Each task's remaining critical path: its expected time plus the longest over the tasks that
/// wait for it (ids outside `known` are not waited for).
#[allow(
    clippy::expect_used,
    reason = "an invariant: every id the plan orders or names is a node of its graph"
)]
fn remaining_paths<'t>(tasks: &'t [Task], known: &BTreeSet<&str>) -> BTreeMap<&'t str, Duration> {
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut waiting: BTreeMap<&str, usize> = BTreeMap::new();
    for task in tasks {
        let dependencies: BTreeSet<&str> = (task.dependencies.iter())
            .map(String::as_str)
            .filter(|d| known.contains(d) && *d != task.id)
            .collect();
        for dependency in &dependencies {
            dependents
                .entry(*dependency)
                .or_default()
                .push(task.id.as_str());
        }
        waiting.insert(task.id.as_str(), dependencies.len());
    }
    // Dependencies first (Kahn's order), then summed from the last task back.
    let mut order: Vec<&str> = (waiting.iter())
        .filter(|(_, count)| **count == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut next = 0;
    while next < order.len() {
        for dependent in dependents.get(order[next]).into_iter().flatten() {
            let count = waiting.get_mut(dependent).expect("dependents are tasks");
            *count -= 1;
            if *count == 0 {
                order.push(*dependent);
            }
        }
        next += 1;
    }
    let expected: BTreeMap<&str, Duration> =
        tasks.iter().map(|t| (t.id.as_str(), t.expected)).collect();
    let mut remaining: BTreeMap<&str, Duration> = BTreeMap::new();
    for id in order.iter().rev() {
        let after = (dependents.get(id).into_iter().flatten())
            .map(|d| remaining[d])
            .max()
            .unwrap_or_default();
        remaining.insert(*id, expected[id] + after);
    }
    // Tasks on a cycle never become ready; they still need a key.
    for task in tasks {
        remaining.entry(task.id.as_str()).or_insert(task.expected);
    }
    remaining
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    fn task(id: &str, deps: &[&str], priority: usize) -> Task {
        Task {
            id: id.into(),
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            priority,
            expected: Duration::ZERO,
            lane: None,
        }
    }

    fn no_stop() -> tokio::sync::watch::Sender<bool> {
        tokio::sync::watch::Sender::new(false)
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_starts_when_its_own_dependencies_finish_not_its_level() {
        // A(10ms) -> B ; C(100ms) -> D. B must start at 10 ms, not after C.
        let tasks = [
            task("A", &[], 1),
            task("B", &["A"], 0),
            task("C", &[], 1),
            task("D", &["C"], 0),
        ];
        let started: Arc<Mutex<BTreeMap<String, u128>>> = Arc::default();
        let origin = tokio::time::Instant::now();
        let outcomes = Executor::fixed(10)
            .run(&tasks, &no_stop(), |id| {
                let started = Arc::clone(&started);
                async move {
                    started
                        .lock()
                        .unwrap()
                        .insert(id.clone(), origin.elapsed().as_millis());
                    let ms = match id.as_str() {
                        "A" => 10,
                        "C" => 100,
                        _ => 1,
                    };
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok::<(), String>(())
                }
            })
            .await;
        assert!(outcomes.values().all(|o| *o == Outcome::Done));
        let started = started.lock().unwrap();
        assert_eq!(started["B"], 10);
        assert_eq!(started["D"], 100);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrency_bounds_and_priority_orders_ready_tasks() {
        let tasks = [
            task("low", &[], 0),
            task("high", &[], 5),
            task("mid", &[], 2),
        ];
        let order: Arc<Mutex<Vec<String>>> = Arc::default();
        Executor::fixed(1)
            .run(&tasks, &no_stop(), |id| {
                let order = Arc::clone(&order);
                async move {
                    order.lock().unwrap().push(id);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Ok::<(), String>(())
                }
            })
            .await;
        assert_eq!(*order.lock().unwrap(), ["high", "mid", "low"]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_failure_stops_dispatch_drains_in_flight_and_skips_the_rest() {
        let tasks = [
            task("fails", &[], 9),
            task("slow", &[], 8),
            task("after", &["fails"], 0),
            task("later", &[], 0),
        ];
        let outcomes = Executor::fixed(2)
            .run(&tasks, &no_stop(), |id| async move {
                match id.as_str() {
                    "fails" => Err("boom".to_string()),
                    "slow" => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok(())
                    }
                    _ => Ok(()),
                }
            })
            .await;
        assert_eq!(outcomes["fails"], Outcome::Failed("boom".into()));
        assert_eq!(outcomes["slow"], Outcome::Done, "in-flight work drains");
        assert_eq!(outcomes["after"], Outcome::Skipped("fails failed".into()));
        assert_eq!(outcomes["later"], Outcome::Skipped("fails failed".into()));
    }

    #[tokio::test]
    async fn a_stop_request_prevents_new_dispatch() {
        let stop = tokio::sync::watch::Sender::new(false);
        let tasks = [task("first", &[], 1), task("second", &["first"], 0)];
        let outcomes = Executor::fixed(4)
            .run(&tasks, &stop, |_id| {
                stop.send_replace(true);
                async { Ok::<(), String>(()) }
            })
            .await;
        assert_eq!(outcomes["first"], Outcome::Done);
        assert_eq!(
            outcomes["second"],
            Outcome::Skipped("the run was interrupted".into())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_lane_holds_its_tasks_while_other_lanes_run_and_throttling_narrows_it() {
        use crate::provisioning::concurrency::{self, Concurrency, ADAPTIVE_START};
        let lanes = Lanes::new(Concurrency::Adaptive);
        let mut tasks: Vec<Task> = (0..20)
            .map(|n| Task {
                lane: Some("AWS::SQS".into()),
                ..task(&format!("q{n}"), &[], 9)
            })
            .collect();
        tasks.push(Task {
            lane: Some("AWS::SNS".into()),
            ..task("t1", &[], 0)
        });
        let peak: Arc<Mutex<(usize, usize)>> = Arc::default();
        let started: Arc<Mutex<BTreeMap<String, u128>>> = Arc::default();
        let origin = tokio::time::Instant::now();
        let outcomes = Executor::in_lanes(Arc::clone(&lanes))
            .run(&tasks, &no_stop(), |id| {
                let (peak, started) = (Arc::clone(&peak), Arc::clone(&started));
                async move {
                    started
                        .lock()
                        .unwrap()
                        .insert(id.clone(), origin.elapsed().as_millis());
                    if id.starts_with('q') {
                        {
                            let mut peak = peak.lock().unwrap();
                            peak.0 += 1;
                            peak.1 = peak.1.max(peak.0);
                        }
                        if id == "q1" {
                            // AWS said "slow down": the SQS lane halves.
                            concurrency::throttled();
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        peak.lock().unwrap().0 -= 1;
                    }
                    Ok::<(), String>(())
                }
            })
            .await;
        assert!(outcomes.values().all(|o| *o == Outcome::Done));
        let started = started.lock().unwrap();
        assert_eq!(started["t1"], 0, "the SNS task does not wait behind SQS");
        assert_eq!(
            peak.lock().unwrap().1,
            ADAPTIVE_START,
            "the lane held the rest"
        );
        let sqs = lanes.figures("AWS::SQS");
        assert_eq!(sqs.throttled, 1);
        assert_eq!(sqs.in_flight, 0);
        assert!(
            sqs.limit < ADAPTIVE_START,
            "halved, then grown slowly: {sqs:?}"
        );
        let at_once = started
            .iter()
            .filter(|(id, at)| id.starts_with('q') && **at == 0)
            .count();
        assert_eq!(at_once, ADAPTIVE_START, "the others waited for a place");
    }

    #[tokio::test(start_paused = true)]
    async fn ready_tasks_go_longest_pole_first_so_the_slow_chain_starts_at_once() {
        // Two slots. Quick work that nothing waits on is listed (and named) first, and has
        // more dependents than the slow chain's head: FIFO or dependent counts would start the
        // NAT gateway last and finish at 90 + its route; longest pole first starts it at 0.
        let timed = |id: &str, deps: &[&str], priority, ms| Task {
            expected: Duration::from_millis(ms),
            ..task(id, deps, priority)
        };
        let tasks = [
            timed("a-queue", &[], 2, 5),
            timed("a-topic", &[], 2, 5),
            timed("a-policy", &["a-queue", "a-topic"], 0, 5),
            timed("b-subnet", &[], 1, 10),
            timed("c-nat", &["b-subnet"], 1, 90),
            timed("d-route", &["c-nat"], 0, 10),
        ];
        let started: Arc<Mutex<BTreeMap<String, u128>>> = Arc::default();
        let origin = tokio::time::Instant::now();
        let by_id: BTreeMap<String, Duration> =
            tasks.iter().map(|t| (t.id.clone(), t.expected)).collect();
        let outcomes = Executor::fixed(2)
            .run(&tasks, &no_stop(), |id| {
                let started = Arc::clone(&started);
                let takes = by_id[&id];
                async move {
                    started
                        .lock()
                        .unwrap()
                        .insert(id, origin.elapsed().as_millis());
                    tokio::time::sleep(takes).await;
                    Ok::<(), String>(())
                }
            })
            .await;
        assert!(outcomes.values().all(|o| *o == Outcome::Done));
        let started = started.lock().unwrap();
        assert_eq!(
            started["b-subnet"], 0,
            "the slow chain's head first: {started:?}"
        );
        assert_eq!(started["c-nat"], 10, "{started:?}");
        assert_eq!(
            started["d-route"], 100,
            "the critical path, 110 ms: {started:?}"
        );
        assert!(
            started["a-policy"] < 100,
            "quick work fills the other slot: {started:?}"
        );
    }

    #[test]
    fn remaining_paths_add_the_longest_chain_after_each_task() {
        let timed = |id: &str, deps: &[&str], ms| Task {
            expected: Duration::from_millis(ms),
            ..task(id, deps, 0)
        };
        let tasks = [
            timed("role", &[], 8),
            timed("policy", &["role"], 1),
            timed("function", &["role", "policy"], 4),
            timed("url", &["function"], 1),
            timed("alone", &["elsewhere"], 3),
        ];
        let known = tasks.iter().map(|t| t.id.as_str()).collect();
        let remaining = remaining_paths(&tasks, &known);
        let ms = |id: &str| remaining[id].as_millis();
        assert_eq!(
            (
                ms("role"),
                ms("policy"),
                ms("function"),
                ms("url"),
                ms("alone")
            ),
            (14, 6, 5, 1, 3)
        );
    }
}
