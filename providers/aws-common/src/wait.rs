//! Waiting for AWS to settle: polling until a resource answers, and retrying a call while it
//! fails in a way that passes (a role IAM just made that a service cannot use yet, ...).
//!
//! Both pace themselves by the time waited so far ([`Pacing`]): the next try comes after about a
//! tenth of it, so completion is seen within ~10% of the operation's real time whether it takes
//! one second or three minutes, and a long wait asks rarely (a doubling schedule capped at 5 s
//! saw an 8 s propagation at 12.75 s; SDK waiters start at 15 s). Pauses run on tokio's clock.

use std::future::Future;
use std::time::Duration;

use cdkd_provider_api::ProviderError;

/// How often a wait asks: a tenth of the time waited so far, within `[floor, cap]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// The shortest pause, and the first one: a quick operation is seen quickly.
    pub floor: Duration,
    /// The longest pause: a type whose readiness matters sooner (or whose API is rate-limited
    /// harder) sets its own.
    pub cap: Duration,
}

impl Pacing {
    /// The pacing of [`poll`]: from 50 ms (AWS's own call latency of ~100-600 ms keeps the
    /// early tries to a few a second) up to 5 s.
    pub const DEFAULT: Pacing = Pacing {
        floor: Duration::from_millis(50),
        cap: Duration::from_secs(5),
    };

    /// The default pacing with another longest pause.
    pub const fn capped(cap: Duration) -> Pacing {
        Pacing {
            floor: Pacing::DEFAULT.floor,
            cap,
        }
    }

    /// The pause after `waited`: a tenth of it, within `[floor, cap]`.
    pub fn pause(&self, waited: Duration) -> Duration {
        (waited / 10).clamp(self.floor, self.cap.max(self.floor))
    }
}

/// Runs `check` until it answers `Some`, paced by [`Pacing::DEFAULT`]; `Ok(None)` once the next
/// pause would go past `patience` (the caller says what did not happen), and the first error of
/// `check` as it is.
pub async fn poll<T, F, Fut>(patience: Duration, check: F) -> Result<Option<T>, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, ProviderError>>,
{
    poll_paced(Pacing::DEFAULT, patience, check).await
}

/// [`poll`] with its own [`Pacing`].
pub async fn poll_paced<T, F, Fut>(
    pacing: Pacing,
    patience: Duration,
    mut check: F,
) -> Result<Option<T>, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, ProviderError>>,
{
    let started = tokio::time::Instant::now();
    let deadline = started + patience;
    loop {
        if let Some(found) = check().await? {
            return Ok(Some(found));
        }
        let pause = pacing.pause(started.elapsed());
        if tokio::time::Instant::now() + pause > deadline {
            return Ok(None);
        }
        tokio::time::sleep(pause).await;
    }
}

/// `call` again while it fails with an error `retryable` accepts, until the next pause would go
/// past `limit`; then its last answer. Any other answer is returned as it is. The pauses start at
/// `first` and follow the time waited ([`Pacing`] with `first` as its floor, up to 5 s), so a
/// mutating call is not repeated faster than `first`. `retryable` is asked only when there is
/// time for another try, with the pause to come, so it may log the retry.
pub async fn retry_while<T, E, F, Fut>(
    first: Duration,
    limit: Duration,
    retryable: impl Fn(&E, Duration) -> bool,
    mut call: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let pacing = Pacing {
        floor: first,
        cap: Pacing::DEFAULT.cap,
    };
    let started = tokio::time::Instant::now();
    let deadline = started + limit;
    loop {
        let pause = pacing.pause(started.elapsed());
        match call().await {
            Err(err)
                if tokio::time::Instant::now() + pause <= deadline && retryable(&err, pause) =>
            {
                tokio::time::sleep(pause).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::ErrorKind;

    #[tokio::test(start_paused = true)]
    async fn polls_until_an_answer_or_the_patience_runs_out() {
        let mut tries = 0;
        let answer = poll(Duration::from_secs(60), || {
            tries += 1;
            let answer = (tries >= 3).then_some(tries);
            async move { Ok(answer) }
        })
        .await;
        assert_eq!(answer.unwrap(), Some(3));
        let started = tokio::time::Instant::now();
        let never = poll(Duration::from_secs(60), || async { Ok(None::<()>) }).await;
        assert_eq!(never.unwrap(), None);
        assert!(started.elapsed() <= Duration::from_secs(60));
        let failed = poll(Duration::from_secs(60), || async {
            Err::<Option<()>, _>(ProviderError::validation("bad"))
        })
        .await;
        assert_eq!(failed.unwrap_err().kind, ErrorKind::VALIDATION);
    }

    #[tokio::test(start_paused = true)]
    async fn retryable_errors_are_tried_again_until_an_answer() {
        let mut tries = 0;
        let answer = retry_while(
            Duration::from_millis(200),
            Duration::from_secs(60),
            |e: &ProviderError, _| e.kind == ErrorKind::NOT_FOUND,
            || {
                tries += 1;
                let result = if tries < 3 {
                    Err(ProviderError::new(ErrorKind::NOT_FOUND, "not yet"))
                } else {
                    Ok(tries)
                };
                async move { result }
            },
        )
        .await;
        assert_eq!(answer.unwrap(), 3);
        let refused = retry_while(
            Duration::from_millis(200),
            Duration::from_secs(60),
            |e: &ProviderError, _| e.kind == ErrorKind::NOT_FOUND,
            || async { Err::<(), _>(ProviderError::validation("bad")) },
        )
        .await;
        assert_eq!(refused.unwrap_err().kind, ErrorKind::VALIDATION);
        let started = tokio::time::Instant::now();
        let gave_up = retry_while(
            Duration::from_millis(500),
            Duration::from_secs(10),
            |_: &ProviderError, _| true,
            || async { Err::<(), _>(ProviderError::new(ErrorKind::ACCESS_DENIED, "no")) },
        )
        .await;
        assert_eq!(gave_up.unwrap_err().kind, ErrorKind::ACCESS_DENIED);
        assert!(started.elapsed() <= Duration::from_secs(10));
    }

    #[test]
    fn pauses_follow_a_tenth_of_the_time_waited_within_the_bounds() {
        let pacing = Pacing::DEFAULT;
        assert_eq!(pacing.pause(Duration::ZERO), Duration::from_millis(50));
        assert_eq!(
            pacing.pause(Duration::from_secs(2)),
            Duration::from_millis(200)
        );
        assert_eq!(
            pacing.pause(Duration::from_secs(90)),
            Duration::from_secs(5)
        );
        let capped = Pacing::capped(Duration::from_secs(15));
        assert_eq!(
            capped.pause(Duration::from_secs(120)),
            Duration::from_secs(12)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_completion_is_seen_within_a_tenth_of_its_time() {
        for ready_after in [
            Duration::from_millis(700),
            Duration::from_secs(8),
            Duration::from_secs(90),
        ] {
            let started = tokio::time::Instant::now();
            let mut tries = 0u32;
            let seen = poll(Duration::from_secs(600), || {
                tries += 1;
                let done = started.elapsed() >= ready_after;
                async move { Ok(done.then_some(())) }
            })
            .await
            .unwrap();
            assert_eq!(seen, Some(()));
            let lag = started.elapsed() - ready_after;
            assert!(
                lag <= ready_after / 10 + Duration::from_millis(50),
                "{ready_after:?}: seen {lag:?} late"
            );
            // Few tries for a long wait: ~10 in the first half second, then ~24 per tenfold.
            assert!(tries < 80, "{ready_after:?}: {tries} tries");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_retried_call_waits_at_least_its_first_pause() {
        let started = tokio::time::Instant::now();
        let mut times = Vec::new();
        let answer = retry_while(
            Duration::from_millis(500),
            Duration::from_secs(60),
            |_: &ProviderError, _| true,
            || {
                times.push(started.elapsed());
                let result = if started.elapsed() < Duration::from_secs(8) {
                    Err(ProviderError::new(ErrorKind::ACCESS_DENIED, "propagating"))
                } else {
                    Ok(())
                };
                async move { result }
            },
        )
        .await;
        assert!(answer.is_ok());
        assert!(times
            .windows(2)
            .all(|w| w[1] - w[0] >= Duration::from_millis(500)));
        assert!(
            *times.last().unwrap() <= Duration::from_millis(8900),
            "{times:?}"
        );
    }
}
