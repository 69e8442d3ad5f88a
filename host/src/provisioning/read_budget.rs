//! How long a read may keep trying, by what it is for.
//!
//! A create, update or delete keeps the long budgets of [`super::provider::with_retries`] and
//! `--resource-timeout`: giving up leaves the stack half changed. A read that only refreshes
//! what cdkd remembers (the drift baseline, `observedProperties`) can wait for the next run,
//! so it gets seconds and then a warning. Without this, a service answering 5xx to one read
//! held a no-change deploy for 79 s (the SDK's eight attempts, each retried by the host).

use std::future::Future;
use std::time::Duration;

use cdkd_provider_api::{ErrorKind, ProviderError};

/// What a read is for, which decides how long it may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPurpose {
    /// The baseline of a resource this run just created or updated.
    Baseline,
    /// A baseline an earlier run did not record, for a resource this run leaves alone: read
    /// while the run works, abandoned [`REFRESH_GRACE`] after the rest is done.
    Refresh,
    /// `cdkd drift` and `state refresh-observed`: the user asked for this read.
    Inspect,
}

/// How long a [`ReadPurpose::Refresh`] may outlive the rest of its deploy.
pub const REFRESH_GRACE: Duration = Duration::from_millis(400);

impl ReadPurpose {
    /// The longest a read for this purpose may take, retries included.
    pub const fn budget(self) -> Duration {
        match self {
            ReadPurpose::Baseline | ReadPurpose::Refresh => Duration::from_secs(5),
            ReadPurpose::Inspect => Duration::from_secs(20),
        }
    }

    /// `read`, or a timeout error naming `what` once [`Self::budget`] has passed (the read is
    /// dropped, which cancels the plugin's call and its SDK retries).
    pub async fn bounded<T>(
        self,
        what: &str,
        read: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let budget = self.budget();
        tokio::time::timeout(budget, read)
            .await
            .unwrap_or_else(|_| {
                Err(ProviderError::new(
                    ErrorKind::TIMEOUT,
                    format!(
                        "{what}: no answer within {} s; a read that can wait is not retried longer",
                        budget.as_secs()
                    ),
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_read_that_outlives_its_budget_is_cut_off_with_a_named_timeout() {
        let started = tokio::time::Instant::now();
        let read = ReadPurpose::Baseline
            .bounded("read Table", async {
                tokio::time::sleep(Duration::from_secs(79)).await;
                Ok(())
            })
            .await;
        let err = read.expect_err("cut off");
        assert_eq!(err.kind, ErrorKind::TIMEOUT);
        assert!(err.message.starts_with("read Table: no answer within 5 s"));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        let quick = ReadPurpose::Inspect
            .bounded("read Queue", async { Ok(7) })
            .await;
        assert_eq!(quick.expect("answered"), 7);
    }
}
