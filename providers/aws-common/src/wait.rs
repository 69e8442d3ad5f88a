//! Waiting for AWS to settle: polling until a resource answers, and retrying a call while it
//! fails in a way that passes (a role IAM just made that a service cannot use yet, ...). Both
//! pause 200 ms (or a given first pause) doubling to 5 s between tries, on tokio's clock.

use std::future::Future;
use std::time::Duration;

use cdkd_provider_api::ProviderError;

/// The first pause of [`poll`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// The longest pause between two tries.
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// Runs `check` until it answers `Some`, pausing from 200 ms doubling to 5 s; `Ok(None)` once
/// the next pause would go past `patience` (the caller says what did not happen), and the
/// first error of `check` as it is.
pub async fn poll<T, F, Fut>(patience: Duration, mut check: F) -> Result<Option<T>, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, ProviderError>>,
{
    let deadline = tokio::time::Instant::now() + patience;
    let mut delay = FIRST_PAUSE;
    loop {
        if let Some(found) = check().await? {
            return Ok(Some(found));
        }
        if tokio::time::Instant::now() + delay > deadline {
            return Ok(None);
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(LONGEST_PAUSE);
    }
}

/// `call` again while it fails with an error `retryable` accepts, pausing from `first`
/// doubling to 5 s, until the next pause would go past `limit`; then its last answer. Any
/// other answer is returned as it is. `retryable` is asked only when there is time for
/// another try, with the pause to come, so it may log the retry.
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
    let deadline = tokio::time::Instant::now() + limit;
    let mut delay = first;
    loop {
        match call().await {
            Err(err)
                if tokio::time::Instant::now() + delay <= deadline && retryable(&err, delay) =>
            {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(LONGEST_PAUSE);
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
}
