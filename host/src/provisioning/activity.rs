//! What a running resource operation is waiting for, told to whoever shows progress: Cloud
//! Control polling, IAM propagation, a throttling back-off, a custom resource's handler.
//!
//! The operation runs in a [`scope`] with a sink; [`waiting`] (called where the wait happens)
//! hands the sink a short phrase. Outside a scope it does nothing.

use std::future::Future;
use std::sync::Arc;

/// Receives what the operation waits for.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

tokio::task_local! {
    static SINK: Sink;
}

/// Runs `operation` with `sink` receiving its [`waiting`] phrases.
pub async fn scope<T>(sink: Sink, operation: impl Future<Output = T>) -> T {
    SINK.scope(sink, operation).await
}

/// The running operation now waits for `what`.
pub fn waiting(what: &str) {
    let _ = SINK.try_with(|sink| sink(what));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[tokio::test]
    async fn phrases_reach_the_scope_sink_and_nothing_outside() {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink: Sink = {
            let seen = Arc::clone(&seen);
            Arc::new(move |what: &str| seen.lock().unwrap().push(what.to_string()))
        };
        waiting("outside");
        scope(sink, async {
            waiting("Cloud Control polling");
            tokio::task::yield_now().await;
            waiting("IAM propagation");
        })
        .await;
        assert_eq!(
            *seen.lock().unwrap(),
            ["Cloud Control polling", "IAM propagation"]
        );
    }
}
