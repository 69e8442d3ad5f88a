//! The state layer's conformance suite (host/src/state/conformance.rs) on the emulator's S3:
//! the same rules the state layer's unit tests run on the in-memory bucket, each on a fresh
//! versioned bucket, so the in-memory bucket is held to what S3 answers.

use std::sync::Arc;

use cdkd::state::storage::{ObjectStorage, S3Storage};
use cdkd_tests::state_world::fresh_bucket;

/// A fresh versioned bucket (as `cdkd bootstrap` makes the state bucket) behind the seam.
async fn fresh() -> Arc<dyn ObjectStorage> {
    let (client, name) = fresh_bucket("conformance", true).await;
    Arc::new(S3Storage::new(client, &name))
}

cdkd::state_conformance_tests!(fresh());
